"""The abstract interpreter of backend methods, and its models of library calls."""
