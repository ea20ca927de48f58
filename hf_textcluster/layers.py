"""Building blocks shared by the clustering methods.

They are defined in the self-contained remote code (``standalone_textcluster.py``, shipped with every pushed model)
and imported here, so that the package and ``trust_remote_code`` models share one checkpoint layout.
"""

from .standalone_textcluster import MaskedLMHead, ProjectionHead, StudentTAssignment

__all__ = ["MaskedLMHead", "ProjectionHead", "StudentTAssignment"]
