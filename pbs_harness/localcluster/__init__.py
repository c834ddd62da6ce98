"""Local cluster provider: namespaced hosts on one Linux machine, reached over real SSH."""
