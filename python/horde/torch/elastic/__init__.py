"""hvd.elastic: Horovod's elastic API (``horovod.torch.elastic``) on horde."""

from horde.common.elastic.commit_store import CommitWriteError
from horde.torch.elastic.run import run
from horde.torch.elastic.sampler import ElasticSampler
from horde.torch.elastic.state import ObjectState, State, TorchState

__all__ = ["run", "State", "ObjectState", "TorchState", "ElasticSampler", "CommitWriteError"]

# Early, so that a host update signalled while the script is still starting does not
# kill the rank (SIGUSR1's default action); importing happens on the main thread.
from horde.common import elastic as _common
from horde.common.elastic import host_updates as _host_updates

if _common.job_directory() is not None:
    _host_updates.install()
