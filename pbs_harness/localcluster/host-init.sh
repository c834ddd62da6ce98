#!/bin/sh
# Boot script of one namespaced host; runs under tini (PID 1 of the host's PID namespace),
# inside the host's network, UTS, mount and PID namespaces.
# Args: HOSTNAME HOST_DIR. Makes the standard paths private, then becomes the host's sshd.
set -eu
name=$1
hostdir=$2

hostname "$name"
# Private copies of the paths that differ per host; /opt/pbs, /usr, /home, /etc stay shared (like NFS).
mount --bind "$hostdir/pbs.conf" /etc/pbs.conf
mount --bind "$hostdir/spool" /var/spool/pbs
# Each host has its own root home, as real hosts do (and the controller's root dotfiles stay out).
mount --bind "$hostdir/root" /root
# A cluster with a login user: its sudo rule lives in the host's own sudoers.d, never in this
# machine's /etc/sudoers.d (which the hosts share otherwise).
if [ -d "$hostdir/sudoers.d" ]; then
    mount --bind "$hostdir/sudoers.d" /etc/sudoers.d
fi
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /var/tmp
mkdir -p /run/sshd /run/lock
chmod 0755 /run/sshd
# PBS's data service (PostgreSQL) puts its socket lock here.
if getent passwd postgres >/dev/null; then
    install -d -o postgres -g postgres -m 2775 /run/postgresql
fi

echo "$(date -Is) host $name booted"
# A real host with PBS installed starts it at boot: do the same once PBS is configured here.
if [ -s /etc/pbs.conf ] && [ -x /etc/init.d/pbs ]; then
    /etc/init.d/pbs start >>"$hostdir/boot-pbs.log" 2>&1 &
fi
exec /usr/sbin/sshd -D -e -f "$hostdir/sshd_config"
