"""The edge of mnemostream: settings, the composition root, one module per consumer group,
the SDK client, the local infrastructure and the CLI."""
