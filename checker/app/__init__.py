"""The application: the scan API, the reporting policy, configuration files, baselines, git."""
