#include "mpi_ops/ring_allreduce.h"

#include <algorithm>
#include <climits>

#include "mpi_ops/abandoned_requests.h"
#include "mpi_ops/mpi_context.h"

namespace horde {
namespace mpi {
namespace {

// The calls' tags: below the probe's and the trees' (0x7E10 and up), a new one each call,
// the allreduce's and the reduce-scatter's apart.
constexpr int kTagBase = 0x7000;
constexpr int kTags = 0x700;

}  // namespace

std::vector<RingAllreduce::Segment> RingAllreduce::SegmentsOf(int chunk) const {
  const int64_t per_segment = std::max<int64_t>(kSegmentBytes / element_size_, 1);
  std::vector<Segment> segments;
  for (int64_t at = 0; at < counts_[chunk]; at += per_segment) {
    segments.push_back({at, static_cast<int>(std::min(per_segment, counts_[chunk] - at))});
  }
  return segments;
}

Status RingAllreduce::PostReceives(int chunk, char* into, MPI_Datatype type) {
  for (const Segment& s : SegmentsOf(chunk)) {
    receives_.push_back(MPI_REQUEST_NULL);
    HORDE_RETURN_IF_ERROR(CheckMpi(MPI_Irecv(into + s.offset * element_size_, s.count, type,
                                             Previous(), tag_, comm_, &receives_.back()),
                                   "MPI_Irecv (ring allreduce)"));
  }
  return Status::Ok();
}

Status RingAllreduce::SendSegment(int chunk, const Segment& segment, char* data,
                                  MPI_Datatype type) {
  sends_.push_back(MPI_REQUEST_NULL);
  return CheckMpi(MPI_Isend(data + (offsets_[chunk] + segment.offset) * element_size_,
                            segment.count, type, Next(), tag_, comm_, &sends_.back()),
                  "MPI_Isend (ring allreduce)");
}

Status RingAllreduce::FinishSends() {
  return CheckMpi(MPI_Waitall(static_cast<int>(sends_.size()), sends_.data(), MPI_STATUSES_IGNORE),
                  "MPI_Waitall (ring allreduce)");
}

// Step s receives chunk rank - s - 1 into half s % 2 of the scratch buffer (the next
// step's receives are posted before this step reduces), reduces it into its place and
// sends each reduced segment on: the next step's send.
Status RingAllreduce::ReduceScatter(char* data, MPI_Datatype type, MPI_Op op) {
  const int steps = size_ - 1;
  const int64_t half = *std::max_element(counts_.begin(), counts_.end()) * element_size_;
  char* scratch = nullptr;
  HORDE_RETURN_IF_ERROR(scratch_.Reserve(2 * half, &scratch));
  auto received = [&](int step) { return (rank_ - step - 1 + 2 * size_) % size_; };
  for (const Segment& s : SegmentsOf(rank_))
    HORDE_RETURN_IF_ERROR(SendSegment(rank_, s, data, type));
  HORDE_RETURN_IF_ERROR(PostReceives(received(0), scratch, type));
  size_t next_receive = 0;
  for (int step = 0; step < steps; ++step) {
    if (step + 1 < steps) {
      HORDE_RETURN_IF_ERROR(
          PostReceives(received(step + 1), scratch + ((step + 1) % 2) * half, type));
    }
    const int chunk = received(step);
    const char* incoming = scratch + (step % 2) * half;
    for (const Segment& s : SegmentsOf(chunk)) {
      HORDE_RETURN_IF_ERROR(CheckMpi(MPI_Wait(&receives_[next_receive++], MPI_STATUS_IGNORE),
                                     "MPI_Wait (ring allreduce)"));
      char* place = data + (offsets_[chunk] + s.offset) * element_size_;
      HORDE_RETURN_IF_ERROR(
          CheckMpi(MPI_Reduce_local(incoming + s.offset * element_size_, place, s.count, type, op),
                   "MPI_Reduce_local (ring allreduce)"));
      if (step + 1 < steps) HORDE_RETURN_IF_ERROR(SendSegment(chunk, s, data, type));
    }
  }
  return FinishSends();
}

// Step s receives the reduced chunk rank - s straight into its place and passes each
// segment on as it arrives; every receive is posted at once (their places differ).
Status RingAllreduce::Allgather(char* data, MPI_Datatype type) {
  const int steps = size_ - 1;
  auto received = [&](int step) { return (rank_ - step + size_) % size_; };
  const int first = (rank_ + 1) % size_;
  for (const Segment& s : SegmentsOf(first))
    HORDE_RETURN_IF_ERROR(SendSegment(first, s, data, type));
  for (int step = 0; step < steps; ++step) {
    const int chunk = received(step);
    HORDE_RETURN_IF_ERROR(PostReceives(chunk, data + offsets_[chunk] * element_size_, type));
  }
  size_t next_receive = 0;
  for (int step = 0; step < steps; ++step) {
    const int chunk = received(step);
    for (const Segment& s : SegmentsOf(chunk)) {
      HORDE_RETURN_IF_ERROR(CheckMpi(MPI_Wait(&receives_[next_receive++], MPI_STATUS_IGNORE),
                                     "MPI_Wait (ring allreduce)"));
      if (step + 1 < steps) HORDE_RETURN_IF_ERROR(SendSegment(chunk, s, data, type));
    }
  }
  return FinishSends();
}

void RingAllreduce::Abandon() {
  for (MPI_Request& request : receives_) CancelReceive(&request);
  std::vector<MPI_Request*> sends;
  for (MPI_Request& request : sends_) sends.push_back(&request);
  DrainSends(sends);
  receives_.clear();
  sends_.clear();
}

void RingAllreduce::StartCall(int element_size) {
  const int first = tags_ == Tags::kAllreduce ? kTagBase : kTagBase + kTags;
  tag_ = first + static_cast<int>(calls_++ % kTags);
  element_size_ = element_size;
  receives_.clear();
  sends_.clear();
}

template <typename Phase>
Status RingAllreduce::Guarded(Phase phase) {
  Status status = phase();
  if (!status.ok()) Abandon();
  receives_.clear();
  sends_.clear();
  return status;
}

Status RingAllreduce::Run(char* data, int64_t count, int element_size, MPI_Datatype type,
                          MPI_Op op) {
  if (size_ < 2 || count == 0) return Status::Ok();
  StartCall(element_size);
  counts_.assign(size_, 0);
  offsets_.assign(size_, 0);
  for (int i = 0; i < size_; ++i) {
    counts_[i] = count / size_ + (i < count % size_ ? 1 : 0);
    if (i > 0) offsets_[i] = offsets_[i - 1] + counts_[i - 1];
  }
  HORDE_RETURN_IF_ERROR(Guarded([&] { return ReduceScatter(data, type, op); }));
  return Guarded([&] { return Allgather(data, type); });
}

// The ring leaves rank r with chunk r + 1 reduced: chunk c is rank c - 1's block.
Status RingAllreduce::RunReduceScatter(char* data, const std::vector<int64_t>& block_counts,
                                       int element_size, MPI_Datatype type, MPI_Op op) {
  if (size_ < 2) return Status::Ok();
  StartCall(element_size);
  std::vector<int64_t> block_offsets(size_, 0);
  for (int r = 1; r < size_; ++r) block_offsets[r] = block_offsets[r - 1] + block_counts[r - 1];
  counts_.assign(size_, 0);
  offsets_.assign(size_, 0);
  for (int c = 0; c < size_; ++c) {
    const int block = (c + size_ - 1) % size_;
    counts_[c] = block_counts[block];
    offsets_[c] = block_offsets[block];
  }
  return Guarded([&] { return ReduceScatter(data, type, op); });
}

}  // namespace mpi
}  // namespace horde
