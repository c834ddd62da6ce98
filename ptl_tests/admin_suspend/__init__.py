"""Admin suspend and the node 'maintenance' state (spec: shared/specs/admin-suspend-maintenance.txt).

Each test is one scenario; the evidence is job and node state from `-F json`, the processes of
the job seen with ps on their hosts, shipped strings from the CLI, and the server, scheduler and
mom logs and the accounting records. PTL's 23 scenarios of pbs_admin_suspend.py map to these tests
in docs/suites/admin_suspend.md.

Hosts and users are taken by role from the `topology` fixture (pbs_harness/suite/topology.py): "plain"
hosts are execution hosts other than the server host that have a single (natural) vnode; the
multi-vnode host is one with more vnodes than its natural one; the localssd vnode offers the custom
resource `localssd`; the job owner, another user, the PBS operator and the PBS manager are the test
accounts of the inventory. A need the cluster cannot meet skips the test.

One module per section: test_suspend_resume (admin-suspend and admin-resume),
test_wrong_states_and_permissions, test_scheduler, test_lifecycle (delete, rerun, offline,
restart, arrays, repeated cycles), test_reservations, test_hooks, test_sister_crash (a fault during
maintenance). conftest.py holds the suite's fixtures; helpers and the shared state of failed tests'
jobs are in ptl_tests/admin_suspend_helpers.py.
"""
