"""Reliable startup, part B: sister failures after assignment, the startup timers, vnode_list_fail,
tolerance after start, launch hook rights, execjob_resize."""
