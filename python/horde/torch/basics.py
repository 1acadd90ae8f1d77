"""Starting and stopping horde, where this process sits in the job, process sets, the
timeline and runtime counters: horde.common's HordeBasics over the torch extension."""

from horde.common.basics import HordeBasics
from horde.torch import _ops

_basics = HordeBasics(_ops)
init = _basics.init
shutdown = _basics.shutdown
is_initialized = _basics.is_initialized
size = _basics.size
rank = _basics.rank
local_size = _basics.local_size
local_rank = _basics.local_rank
cross_size = _basics.cross_size
cross_rank = _basics.cross_rank
is_homogeneous = _basics.is_homogeneous
mpi_threads_supported = _basics.mpi_threads_supported
mpi_enabled = _basics.mpi_enabled
mpi_built = _basics.mpi_built
nccl_built = _basics.nccl_built
cuda_built = _basics.cuda_built
rocm_built = _basics.rocm_built
gloo_built = _basics.gloo_built
gloo_enabled = _basics.gloo_enabled
ccl_built = _basics.ccl_built
ddl_built = _basics.ddl_built
runtime_stats = _basics.runtime_stats
straggler_report = _basics.straggler_report
add_process_set = _basics.add_process_set
remove_process_set = _basics.remove_process_set
start_timeline = _basics.start_timeline
stop_timeline = _basics.stop_timeline
