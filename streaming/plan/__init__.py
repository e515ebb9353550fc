"""Epoch planning: pure functions from shard sizes, streams, world and epoch to sample ids."""
