"""What is checked, one module per kind (secrets, setuid, accounts, hooks, archives, drift), and the layer facts.
May import source/, findings.py and policy.py; never vulnerabilities/ or the gate."""
