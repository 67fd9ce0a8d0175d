"""Neural-network built-ins (activation, connection, loss, ...). Filled in as
the library gains them; every entry is skipped if the library lacks it."""
__all__ = []
