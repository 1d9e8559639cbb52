"""A one-module Lambda layer for the emulator test app (stands in for the shared ``sqslease`` layer)."""

GREETING = "hello from the layer"
