#pragma once

#include <functional>
#include <optional>
#include <string>

#include "launcher/mpi_flavor.h"

namespace horde::launcher {

struct JobSpec;  // job_spec.h, which needs launcher_options.h, which needs ElasticMode

// How an elastic job survives a lost rank (--elastic-mode):
//  - restart: the generation ends, and the next one starts from the last commit on the
//    hosts that are left (any MPI);
//  - in-place: mpirun runs with Open MPI 5's fault-tolerance extension (ULFM, prterun
//    --with-ft ulfm), so the job outlives the rank and the survivors shrink their
//    communicator and go on in the same processes;
//  - auto: in-place where the MPI can, else restart.
enum class ElasticMode { kRestart, kInPlace, kAuto };

// "restart", "in-place" or "auto"; nullopt for anything else.
std::optional<ElasticMode> ParseElasticMode(const std::string& value);

// Whether the Open MPI of an mpirun has ULFM, as its ompi_info says, or why that is unknown.
struct UlfmProbe {
  std::optional<bool> ulfm;  // none: could not tell
  std::string detail;        // why not, one line: "no ompi_info beside /usr/bin/mpirun"
};

// Reads the output of `ompi_info --parsable` ("options:ft_mpi_support:yes"), or of plain
// `ompi_info` ("          FT MPI support: yes"). Open MPI 4's "FT Checkpoint support"
// is another thing (checkpoint/restart) and says nothing.
UlfmProbe ParseOmpiInfo(const std::string& output);

// Runs `ompi_info --parsable` found beside `mpirun_path` (or beside the file it links
// to), with a timeout, and reads it.
UlfmProbe ProbeUlfm(const std::string& mpirun_path);

// The mode of a job, decided once, and the line that says so ("elastic mode: ...",
// empty for a restart the user asked for: today's behaviour, nothing to say).
struct ElasticModeChoice {
  bool in_place = false;
  std::string line;
};

// `probe` runs only where it matters (Open MPI 5 or newer, and in-place or auto asked).
// Throws UsageError when in-place is asked for and `mpi` cannot do it, with the reason.
ElasticModeChoice ChooseElasticMode(ElasticMode requested, const MpiInstall& mpi,
                                    const std::function<UlfmProbe()>& probe);

// What in place changes in a generation's job: mpirun runs with ULFM
// (JobSpec::fault_tolerant), and every rank gets HORDE_ELASTIC_IN_PLACE=1 and
// HORDE_ELASTIC_MIN_NP=`min_np` (fewer survivors leave with the reset code, to re-form).
// A restart changes nothing: neither variable is set.
void ApplyElasticMode(bool in_place, int min_np, JobSpec& job);

}  // namespace horde::launcher
