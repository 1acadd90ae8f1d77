#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launcher/elastic_services.h"
#include "launcher/generation_output.h"
#include "launcher/mpi_command.h"

namespace horde::launcher {

// A generation as one mpirun: started (job_runner.h's StartJob) in a process group of
// its own, with its stderr through horderun, passed on as it comes and read line by
// line (GenerationOutput). `build` turns a plan into the command; `old_mask` is the
// signal mask mpirun gets (horderun blocks the signals its loop waits for).
class MpirunGeneration : public GenerationRunner {
 public:
  static constexpr auto kGrace = std::chrono::seconds(10);  // from a stop to SIGKILL

  MpirunGeneration(std::string program, std::function<MpiCommand(const GenerationPlan&)> build,
                   const sigset_t& old_mask);
  ~MpirunGeneration() override;

  void Start(const GenerationPlan& plan) override;
  std::optional<GenerationEnd> Poll(std::chrono::milliseconds wait) override;
  std::vector<RankEnd> TakeRankFailures() override { return output_.TakeWrapperReports(); }
  void SendHostUpdate() override;
  void Stop(int signal) override;

 private:
  void Pump(std::chrono::milliseconds wait);
  void Drain();
  GenerationEnd End(int status);

  std::string program_;
  std::function<MpiCommand(const GenerationPlan&)> build_;
  sigset_t old_mask_;
  pid_t pid_ = -1;
  int stderr_fd_ = -1;
  std::string partial_;
  GenerationOutput output_;
  std::optional<int> stopped_status_;
};

}  // namespace horde::launcher
