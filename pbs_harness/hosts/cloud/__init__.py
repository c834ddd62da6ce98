"""Cloud test clusters: `pbs-harness up --cloud KIND`, `down --run RUN`, `sweep` (docs/cloud.md).

Provider-neutral: what a run is and how it is kept (request: the checked request and its run id;
records: the run's record, saved before anything is created), and the lifecycle (lifecycle: up,
down, sweep), which runs the kind's playbooks. Everything that belongs to one cloud (its regions,
credentials, images, endpoint, faults, playbooks) is that cloud's kind of host, one module behind
the host-kind interface (pbs_harness.hosts; AWS: pbs_harness.hosts.aws), found in the registry
by the --cloud name.

Teardown in layers (ParallelCluster, Molecule, nodepool): every resource is tagged with the run id,
the owner and the expiry; the record is saved before anything is created; `down` finds resources by
tag and retries; `up` tears down what it made when it fails (unless --keep-on-failure); `sweep`
removes the owner's runs that are gone or expired; each VM powers off (= terminates) at its TTL.
"""
