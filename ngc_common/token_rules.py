"""Token kinds with a shape of their own (a vendor prefix, or a vendor's name next to a value of its format).

Why: the gate used to find these through the trivy it embeds; where trivy is absent or older, coverage dropped
without a word. These are the kinds trivy's built-in secret rules know (pkg/fanal/secret/builtin-rules.go: the
same ids and severities, so a finding reads the same whichever scanner made it), written here as our own so the
gate and the in-image hygiene checks find them with the standard library alone. The kinds our older rules
already covered under their own ids are in secret_patterns.CREDENTIALS, and TRIVY_IDS maps trivy's ids onto
them. Each rule has anchors: literal bytes one of which must be in the buffer (in any case) before its pattern
runs; secret_patterns finds all anchors of all rules in one pass.
"""

import re
from dataclasses import dataclass

# What may sit between a vendor's name and its value: `facebook_token = "..."`, `"twitter.secret": '...'`.
_KEY_TAIL = rb"[a-z0-9_ .\-,]{0,25}(?:=|>|:=|\|\|:|<=|=>|:).{0,5}['\"]"
_UUID_A_H = rb"[a-h0-9]{8}-[a-h0-9]{4}-[a-h0-9]{4}-[a-h0-9]{4}-[a-h0-9]{12}"


@dataclass(frozen=True)
class TokenRule:
    id: str  # trivy's rule id
    severity: str  # trivy's severity for it
    anchors: tuple[bytes, ...]
    pattern: re.Pattern[bytes]
    lower: bool = False  # the pattern ignores case (its anchors are found in any case)
    keyed: bool = False  # the pattern starts at its anchor (a vendor's name): tried only where the anchor is


def _keyed(rule: str, severity: str, vendor: str, value: bytes) -> TokenRule:
    """A value of `value`'s shape, quoted, right after the vendor's name and an assignment (case-insensitive)."""
    return TokenRule(rule, severity, (vendor.encode(),),
                     re.compile(rb"(?i)" + vendor.encode() + _KEY_TAIL + value + rb"['\"]"), lower=True, keyed=True)


def _prefixed(rule: str, severity: str, pattern: bytes, *anchors: str) -> TokenRule:
    return TokenRule(rule, severity, tuple(a.encode() for a in anchors), re.compile(pattern))


RULES: tuple[TokenRule, ...] = (
    _prefixed("hugging-face-access-token", "CRITICAL", rb"h(?<![0-9A-Za-z]h)f_[A-Za-z0-9]{34,40}", "hf_"),
    _prefixed("shopify-token", "HIGH", rb"shp(?:ss|at|ca|pa)_[a-fA-F0-9]{32}", "shpss_", "shpat_", "shpca_", "shppa_"),
    _prefixed("stripe-publishable-token", "LOW", rb"p(?<![0-9A-Za-z]p)(?i:k_(?:test|live)_[0-9a-z]{10,32})",
              "pk_test_", "pk_live_", "PK_TEST_", "PK_LIVE_"),
    _keyed("heroku-api-key", "HIGH", "heroku", rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"),
    _prefixed("slack-web-hook", "MEDIUM", rb"https://hooks\.slack\.com/services/[A-Za-z0-9+/]{44,48}",
              "hooks.slack.com"),
    _prefixed("twilio-api-key", "MEDIUM", rb"SK[0-9a-fA-F]{32}", "SK"),
    _prefixed("age-secret-key", "MEDIUM", rb"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
              "AGE-SECRET-KEY-1"),
    _keyed("facebook-token", "LOW", "facebook", rb"[a-f0-9]{32}"),
    _keyed("twitter-token", "LOW", "twitter", rb"[a-f0-9]{35,44}"),
    _keyed("adobe-client-id", "LOW", "adobe", rb"[a-f0-9]{32}"),
    _prefixed("adobe-client-secret", "LOW", rb"p8e-(?i:[a-z0-9]{32})", "p8e-"),
    _prefixed("alibaba-access-key-id", "HIGH", rb"L(?<![0-9A-Za-z]L)TAI(?i:[a-z0-9]{20})(?![0-9A-Za-z])", "LTAI"),
    _keyed("alibaba-secret-key", "HIGH", "alibaba", rb"[a-z0-9]{30}"),
    _keyed("asana-client-id", "MEDIUM", "asana", rb"[0-9]{16}"),
    _keyed("asana-client-secret", "MEDIUM", "asana", rb"[a-z0-9]{32}"),
    _keyed("atlassian-api-token", "HIGH", "atlassian", rb"[a-z0-9]{24}"),
    _keyed("bitbucket-client-id", "HIGH", "bitbucket", rb"[a-z0-9]{32}"),
    _keyed("bitbucket-client-secret", "HIGH", "bitbucket", rb"[a-z0-9_\-]{64}"),
    _keyed("beamer-api-token", "LOW", "beamer", rb"b_[a-z0-9=_\-]{44}"),
    _prefixed("clojars-api-token", "MEDIUM", rb"CLOJARS_(?i:[a-z0-9]{60})", "CLOJARS_"),
    _keyed("contentful-delivery-api-token", "LOW", "contentful", rb"[a-z0-9\-=_]{43}"),
    _prefixed("databricks-api-token", "MEDIUM", rb"dapi[a-h0-9]{32}", "dapi"),
    _keyed("discord-api-token", "MEDIUM", "discord", rb"[a-h0-9]{64}"),
    _keyed("discord-client-id", "MEDIUM", "discord", rb"[0-9]{18}"),
    _keyed("discord-client-secret", "MEDIUM", "discord", rb"[a-z0-9=_\-]{32}"),
    _prefixed("doppler-api-token", "MEDIUM", rb"['\"]dp\.pt\.(?i:[a-z0-9]{43})['\"]", "dp.pt."),
    _keyed("dropbox-api-secret", "HIGH", "dropbox", rb"[a-z0-9]{15}"),
    _keyed("dropbox-short-lived-api-token", "HIGH", "dropbox", rb"sl\.[a-z0-9\-=_]{135}"),
    _keyed("dropbox-long-lived-api-token", "HIGH", "dropbox", rb"[a-z0-9]{11}AAAAAAAAAA[a-z0-9\-_=]{43}"),
    _prefixed("duffel-api-token", "LOW", rb"['\"]duffel_(?:test|live)_(?i:[a-z0-9_-]{43})['\"]",
              "duffel_test_", "duffel_live_"),
    _prefixed("dynatrace-api-token", "MEDIUM", rb"['\"]dt0c01\.(?i:[a-z0-9]{24}\.[a-z0-9]{64})['\"]", "dt0c01."),
    _prefixed("easypost-api-token", "LOW", rb"['\"]EZ[AT]K(?i:[a-z0-9]{54})['\"]", "EZAK", "EZTK"),
    _keyed("fastly-api-token", "MEDIUM", "fastly", rb"[a-z0-9\-=_]{32}"),
    _keyed("finicity-client-secret", "MEDIUM", "finicity", rb"[a-z0-9]{20}"),
    _keyed("finicity-api-token", "MEDIUM", "finicity", rb"[a-f0-9]{32}"),
    _prefixed("flutterwave-public-key", "MEDIUM", rb"FLW(?:PUB|SEC)K_TEST-(?i:[a-h0-9]{32})-X",
              "FLWSECK_TEST-", "FLWPUBK_TEST-"),
    _prefixed("flutterwave-enc-key", "MEDIUM", rb"FLWSECK_TEST[a-h0-9]{12}", "FLWSECK_TEST"),
    _prefixed("frameio-api-token", "LOW", rb"fio-u-(?i:[a-z0-9\-_=]{64})", "fio-u-"),
    _prefixed("gocardless-api-token", "MEDIUM", rb"['\"]live_(?i:[a-z0-9\-_=]{40})['\"]", "live_"),
    _prefixed("grafana-api-token", "MEDIUM", rb"eyJrIjoi(?i:[a-z0-9\-_=]{72,92})", "eyJrIjoi"),
    TokenRule("hashicorp-tf-api-token", "MEDIUM", (b"atlasv1.",),
              re.compile(rb"(?i)['\"][a-z0-9]{14}\.atlasv1\.[a-z0-9\-_=]{60,70}['\"]"), lower=True),
    _keyed("hubspot-api-token", "LOW", "hubspot", _UUID_A_H),
    _keyed("intercom-api-token", "LOW", "intercom", rb"[a-z0-9=_]{60}"),
    _keyed("intercom-client-secret", "LOW", "intercom", _UUID_A_H),
    _keyed("ionic-api-token", "HIGH", "ionic", rb"ion_[a-z0-9]{42}"),  # trivy gives it no severity
    _prefixed("linear-api-token", "MEDIUM", rb"lin_api_(?i:[a-z0-9]{40})", "lin_api_"),
    _keyed("linear-client-secret", "MEDIUM", "linear", rb"[a-f0-9]{32}"),
    _keyed("lob-api-key", "LOW", "lob", rb"(?:live|test)_[a-f0-9]{35}"),
    _keyed("lob-pub-api-key", "LOW", "lob", rb"(?:test|live)_pub_[a-f0-9]{31}"),
    _keyed("mailchimp-api-key", "MEDIUM", "mailchimp", rb"[a-f0-9]{32}-us20"),
    _keyed("mailgun-token", "MEDIUM", "mailgun", rb"(?:pub)?key-[a-f0-9]{32}"),
    _keyed("mailgun-signing-key", "MEDIUM", "mailgun", rb"[a-h0-9]{32}-[a-h0-9]{8}-[a-h0-9]{8}"),
    TokenRule("mapbox-api-token", "MEDIUM", (b"pk.",), re.compile(rb"(?i)pk\.[a-z0-9]{60}\.[a-z0-9]{22}"),
              lower=True),
    _keyed("messagebird-api-token", "MEDIUM", "messagebird", rb"[a-z0-9]{25}"),
    _keyed("messagebird-client-id", "MEDIUM", "messagebird", _UUID_A_H),
    _prefixed("new-relic-user-api-key", "MEDIUM", rb"['\"]NRAK-[A-Z0-9]{27}['\"]", "NRAK-"),
    _keyed("new-relic-user-api-id", "MEDIUM", "newrelic", rb"[a-z0-9]{64}"),
    _prefixed("new-relic-browser-api-token", "MEDIUM", rb"['\"]NRJS-[a-f0-9]{19}['\"]", "NRJS-"),
    _prefixed("planetscale-password", "MEDIUM", rb"pscale_pw_(?i:[a-z0-9\-_.]{43})", "pscale_pw_"),
    _prefixed("planetscale-api-token", "MEDIUM", rb"pscale_tkn_(?i:[a-z0-9\-_.]{43})", "pscale_tkn_"),
    _prefixed("private-packagist-token", "HIGH", rb"packagist_[ou][ru]t_(?i:[a-f0-9]{68})",
              "packagist_uut_", "packagist_ort_", "packagist_out_", "packagist_urt_"),
    _prefixed("postman-api-token", "MEDIUM", rb"PMAK-(?i:[a-f0-9]{24}-[a-f0-9]{34})", "PMAK-"),
    _prefixed("pulumi-api-token", "HIGH", rb"pul-[a-f0-9]{40}", "pul-"),
    _prefixed("rubygems-api-token", "MEDIUM", rb"rubygems_[a-f0-9]{48}", "rubygems_"),
    _prefixed("sendgrid-api-token", "MEDIUM", rb"SG\.(?i:[a-z0-9_\-.]{66})", "SG."),
    _prefixed("sendinblue-api-token", "LOW", rb"xkeysib-[a-f0-9]{64}-(?i:[a-z0-9]{16})", "xkeysib-"),
    _prefixed("shippo-api-token", "LOW", rb"shippo_(?:live|test)_[a-f0-9]{40}", "shippo_live_", "shippo_test_"),
    _keyed("linkedin-client-secret", "LOW", "linkedin", rb"[a-z]{16}"),
    _keyed("linkedin-client-id", "LOW", "linkedin", rb"[a-z0-9]{14}"),
    _keyed("twitch-api-token", "LOW", "twitch", rb"[a-z0-9]{30}"),
    TokenRule("typeform-api-token", "LOW", (b"typeform",),
              re.compile(rb"(?i)typeform[a-z0-9_ .\-,]{0,25}(?:=|>|:=|\|\|:|<=|=>|:).{0,5}tfp_[a-z0-9\-_.=]{59}"),
              lower=True),
    TokenRule("dockerconfig-secret", "HIGH", (b"dockerc",),
              re.compile(rb"(?i)\.(?:dockerconfigjson|dockercfg):\s*\|*\s*(?:ey|ew)+[A-Za-z0-9/+=]+"), lower=True),
)

# trivy's ids for the kinds secret_patterns.CREDENTIALS (and its private-key rule) name otherwise.
TRIVY_IDS = {
    "aws-access-key-id": "aws-access-key-id", "aws-secret-access-key": "aws-secret-access-key",
    "github-pat": "github-token", "github-oauth": "github-token", "github-app-token": "github-token",
    "github-refresh-token": "github-token", "github-fine-grained-pat": "github-token",
    "gitlab-pat": "gitlab-token", "private-key": "private-key", "slack-access-token": "slack-token",
    "stripe-secret-token": "stripe-secret-key", "pypi-upload-token": "pypi-upload-token",
    "gcp-service-account": "gcp-service-account", "jwt-token": "jwt", "npm-access-token": "npm-token",
    **{rule.id: rule.id for rule in RULES},
}
SEVERITY = {rule.id: rule.severity for rule in RULES}  # ours: CRITICAL for every other credential rule
