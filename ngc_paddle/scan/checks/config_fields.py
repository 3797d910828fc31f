"""Which fields of an image config decide what runs or what is trusted: the one list, as data.

Why: Docker applies every Env, Entrypoint, Cmd, Shell and OnBuild entry of the config to every container and
every image built FROM it, so a changed loader, interpreter, package-index, proxy or CA variable decides trust
as much as /etc/ld.so.preload does. config_record.py blocks a change to these and lists any other.
"""

import re

# The config fields compared with our build's record, in report order.
FIELDS = ("Env", "Entrypoint", "Cmd", "User", "WorkingDir", "Shell", "OnBuild", "Volumes", "ExposedPorts",
          "Labels", "StopSignal", "Healthcheck")
# Fields whose change decides what runs, and as whom.
TRUST_FIELDS = frozenset({"Entrypoint", "Cmd", "Shell", "OnBuild", "User"})
# Environment variables, by the category the finding names.
TRUST_ENV: dict[str, frozenset[str]] = {
    "dynamic loader": frozenset({"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT"}),
    "interpreter start-up": frozenset({"PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONUSERBASE", "PERL5LIB",
                                       "PERL5OPT", "NODE_OPTIONS", "BASH_ENV", "ENV"}),
    "command search path": frozenset({"PATH"}),
    "package index": frozenset({"PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST", "PIP_FIND_LINKS",
                                "UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_DEFAULT_INDEX", "UV_INDEX"}),
    "CA store": frozenset({"SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "PIP_CERT",
                           "NODE_EXTRA_CA_CERTS"}),
}
PROXY = re.compile(r"^(https?|ftp|all|no)_proxy$", re.IGNORECASE)  # honoured in either case


def env_trust(name: str) -> str | None:
    """The category of trust an environment variable decides, or None."""
    if PROXY.match(name):
        return "proxy"
    return next((category for category, names in TRUST_ENV.items() if name in names), None)


def field_trust(name: str) -> str | None:
    return "what runs" if name in TRUST_FIELDS else None
