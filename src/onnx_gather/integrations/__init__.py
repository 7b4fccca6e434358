"""Plug-ins for the converters users already run; each imports its converter on use."""
