"""What local hosts run in: nspawn, cgroups, Debian images and their cache."""
