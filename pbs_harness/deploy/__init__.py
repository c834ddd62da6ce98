"""What goes onto the hosts: OpenPBS source and packages, the playbooks run, hook config, verify, mutants."""
