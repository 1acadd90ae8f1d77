#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>

#include "core/autotuner.h"
#include "core/config.h"
#include "core/negotiator.h"
#include "core/op_registry.h"
#include "core/round_pacer.h"
#include "core/runtime_stats.h"
#include "core/straggler_watch.h"
#include "core/tensor_queue.h"
#include "core/timeline.h"
#include "core/topology.h"
#include "core/transport.h"
#include "core/unnamed_numbering.h"

namespace horde {

// One process's horde: the queue framework threads submit to, and the background
// thread that negotiates with the other ranks and executes the agreed collectives.
// Every network call happens on that thread.
class Runtime {
 public:
  // `timeline` is shared with the ops that record their own phases; null: a private one.
  Runtime(Config config, Topology topology, std::unique_ptr<Transport> transport,
          std::unique_ptr<OpRegistry> ops, std::shared_ptr<Timeline> timeline = nullptr);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Validates and queues one operation; its callback fires on the background thread
  // once it has run (or failed). Local mistakes are returned here, synchronously.
  // An unnamed operation is named "<op>.noname.<n>" ("<op>.noname.<n>.e<epoch>" after the
  // first epoch), n counting this runtime's unnamed operations of that kind in the
  // current numbering epoch, so ranks that submit them in the same order agree.
  Status Enqueue(Request request, TensorEntry entry);
  // Queues several operations at once, all or none. Their elements are moved out (the
  // vectors keep their capacity, for a caller that reuses them batch after batch).
  Status Enqueue(std::vector<Request>* requests, std::vector<TensorEntry>* entries);
  // Queues operations negotiated as one group, all or none: they run only when every
  // member is ready on every rank. Member i of group G is named "G.i" unless named; an
  // empty G is numbered like an unnamed operation ("group.noname.<n>").
  Status EnqueueGroup(std::string group, std::vector<Request>* requests,
                      std::vector<TensorEntry>* entries);

  // Starts a new numbering epoch: unnamed operations are numbered from 0 again, under
  // names no earlier epoch used (see core/numbering_epochs.h). Called where every rank
  // passes in program order: init() when already initialized, and (by the runtime
  // itself) a completed barrier or join.
  void StartNumberingEpoch();

  // Asks every rank to leave the loop and waits until this one has. Operations still
  // pending complete with an Aborted status. Safe to call more than once.
  void Shutdown();
  // Shutdown because this rank failed: every rank's pending and later operations fail
  // with "rank <r> failed: <failure>" (the first failed rank's, if several).
  void Abort(const std::string& failure);

  // True once the background loop has exited: this rank or another shut down, or the
  // transport failed. Operations submitted afterwards fail at once.
  bool stopped() const { return stopped_.load(); }

  // Starts (or switches) and stops rank 0's timeline; other ranks record nothing, so
  // for them these succeed and do nothing, as in Horovod. A path with
  // kTimelineRankPlaceholder makes every rank record its own file.
  Status StartTimeline(const std::string& path, bool mark_cycles);
  Status StopTimeline();
  const std::shared_ptr<Timeline>& timeline() const { return timeline_; }
  // Opens HORDE_AUTOTUNE_LOG on rank 0 when autotuning; an error names the file.
  Status OpenAutotuneLog();

  const Topology& topology() const { return topology_; }
  const Config& config() const { return config_; }
  RuntimeStats stats() const;
  // Which rank the others wait for, over the last window of rounds (see StragglerWatch).
  StragglerReport straggler_report() const { return straggler_.report(); }

 private:
  void Loop();
  void Execute(const Response& response);
  // Completes this rank's join (core/rank_join.h), where every rank renumbers.
  void CompleteJoin(const Response& response);
  void Record(const Response& response, const std::vector<TensorEntry>& entries);
  // Autotuning: rank 0 samples and chooses; every rank applies the choice that came
  // with the round, so all switch after the same round.
  void Tune();
  void Apply(const TunableParameters& parameters);

  const Config config_;
  const Topology topology_;
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<OpRegistry> ops_;
  std::shared_ptr<Timeline> timeline_;
  Negotiator negotiator_;
  RoundPacer pacer_;
  TensorQueue queue_;

  std::atomic<bool> shutdown_requested_{false};
  std::mutex failure_mu_;
  std::string failure_;  // set by Abort
  std::atomic<bool> stopped_{false};
  UnnamedNumbering unnamed_;
  std::unique_ptr<Autotuner> autotuner_;  // null unless HORDE_AUTOTUNE=1
  uint64_t applied_choice_ = 0;
  int64_t round_bytes_ = 0;
  SteadyTime round_latest_submission_{};     // background thread only: of this round's entries
  SteadyTime round_first_collective_end_{};  // background thread only: the straggler's clock
  StragglerWatch straggler_;                 // background thread only: bytes this round reduced
  std::vector<TensorEntry> executing_;       // background thread only: Execute()'s, reused
  mutable std::mutex stats_mu_;
  RuntimeStats stats_;
  std::thread loop_;
};

}  // namespace horde
