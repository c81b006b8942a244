"""`checker plan`: which bundles of a zoo must run, chosen by content (what changed since a commit, what has no
trusted stored verdict), balanced by what each costs over the legs of a GitHub Actions matrix."""
