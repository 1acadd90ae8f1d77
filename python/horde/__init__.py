"""horde: a Horovod-style distributed training runtime. Use ``import horde.torch as hvd``."""

__version__ = "0.1.0"
