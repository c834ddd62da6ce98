"""The hosts as the controller reaches them: inventory, ssh config, reachability, transport, cluster."""
