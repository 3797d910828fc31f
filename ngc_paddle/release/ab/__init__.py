"""A/B gates: a candidate image measured side by side with a reference image on the same host or node.

Why: an absolute threshold calibrated on one machine does not travel (a 2x training regression once passed on
another CPU model), and a baseline file measured on another day is two measurements that never met. Here both
images run interleaved in short rounds on one node (the round loop lives in the fleet's job script,
ngc_paddle/release/fleet/payload.sh, so a single host and a cluster node run the same steps), and the gate is the
ratio candidate/reference per metric with a confidence interval from the rounds.

Modules, one job each: `stats` (bootstrap interval, paired signed-rank test, rounds still needed), `metrics` (which
figures of a round are compared, and which way is better), `rounds` (reading a job's bench-ab folder), `verdict`
(PASS / FAIL / NOT PROVEN per metric and overall), `ab_report` (ab.json, ab.md, rounds.svg), `reference` (the previous
release's image by digest), `plan` (the job spec of an A/B), `compare` (the `ngc-paddle bench-compare` command).
"""
