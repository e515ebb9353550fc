"""Stand-in for ``google.cloud.storage`` (not installed here): the reference's GCS tests import
it at module level to patch its client. ``google`` and ``google.cloud`` stay namespace packages
so that an installed ``google.protobuf`` still imports."""


class Client:
    """Never used for real: the tests that need GCS patch it, and are expected to fail."""
