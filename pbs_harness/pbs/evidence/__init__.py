"""Evidence readers: daemon logs and accounting records of any host."""
