"""The verdict store of `checker verify --reuse STORE`: a folder of signed attestations, each filed under the
key of everything its verdict depends on, so that a bundle whose key has a trusted verdict is not run again.

It sits above `verify`: it decides which bundles the stages run on, and loads them only for those."""
