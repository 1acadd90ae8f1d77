#include "mpi_ops/mpi_adasum_allreduce.h"

#include <algorithm>
#include <cstring>

#include "core/operation_name.h"
#include "core/rank_agreement.h"
#include "mpi_ops/host_scale.h"
#include "mpi_ops/mpi_transport.h"

namespace horde {
namespace mpi {
namespace {

// The runtime's communicator carries no other point-to-point traffic while an operation
// runs (one background thread executes one response at a time), so one tag serves all.
constexpr int kTag = 0xADA5;
// MPI counts are ints: larger halves travel in several messages.
constexpr int64_t kMaxMessageBytes = int64_t{1} << 30;

int MessageBytes(int64_t bytes, int64_t at) {
  return static_cast<int>(std::clamp<int64_t>(bytes - at, 0, kMaxMessageBytes));
}

// Sends send_bytes to `peer` while receiving recv_bytes from it. The peer makes the
// mirror call (its send is this rank's receive), so both loop the same number of times.
Status Exchange(MPI_Comm comm, int peer, const char* send, int64_t send_bytes, char* recv,
                int64_t recv_bytes) {
  for (int64_t at = 0; at < std::max(send_bytes, recv_bytes); at += kMaxMessageBytes) {
    const int out = MessageBytes(send_bytes, at);
    const int in = MessageBytes(recv_bytes, at);
    HORDE_RETURN_IF_ERROR(CheckMpi(
        MPI_Sendrecv(out > 0 ? send + at : send, out, MPI_BYTE, peer, kTag,
                     in > 0 ? recv + at : recv, in, MPI_BYTE, peer, kTag, comm, MPI_STATUS_IGNORE),
        "MPI_Sendrecv (Adasum)"));
  }
  return Status::Ok();
}

bool IsPowerOfTwo(int n) { return n > 0 && (n & (n - 1)) == 0; }

}  // namespace

Status MpiAdasumAllreduce::Execute(std::vector<TensorEntry>& entries, const Response& response) {
  const int size = context_->topology().size;
  if (!IsPowerOfTwo(size)) {
    // Refused at submit already; kept so a request that slipped through cannot hang.
    return Status::Unimplemented("Adasum needs a power-of-two number of ranks, not " +
                                 std::to_string(size));
  }
  const DataType dtype = response.dtype;
  const int64_t element_size = DataTypeSize(dtype);
  std::vector<int64_t> counts;
  for (const auto& e : entries) counts.push_back(e.input->size_bytes() / element_size);
  const adasum::TensorLayout layout(counts);
  const int64_t total_bytes = layout.total() * element_size;

  // One tensor is reduced in its output; several are packed back to back (no alignment
  // padding, so every buffer element belongs to a tensor).
  const bool fused = entries.size() > 1;
  const int64_t half_bytes = (layout.total() + 1) / 2 * element_size;
  HORDE_RETURN_IF_ERROR(ReserveBuffers(fused ? total_bytes : 0, half_bytes, response));
  char* data;
  if (fused) {
    timeline_->ActivityStart(response.names, "MEMCPY_IN_FUSION_BUFFER");
    data = fusion_data_;
    int64_t at = 0;
    for (const auto& e : entries) {
      const int64_t bytes = e.input->size_bytes();
      if (bytes > 0) std::memcpy(data + at, e.input->data(), bytes);
      at += bytes;
    }
  } else {
    TensorEntry& e = entries[0];
    data = static_cast<char*>(e.output->data());
    if (e.output->data() != e.input->data() && total_bytes > 0)
      std::memcpy(data, e.input->data(), total_bytes);
  }

  timeline_->ActivityStart(response.names, "MPI_ADASUM_ALLREDUCE");
  if (response.prescale != 1.0) ScaleHostBuffer(data, layout.total(), dtype, response.prescale);
  HORDE_RETURN_IF_ERROR(Reduce(data, layout, dtype));
  if (response.postscale != 1.0) ScaleHostBuffer(data, layout.total(), dtype, response.postscale);

  if (fused) {
    timeline_->ActivityStart(response.names, "MEMCPY_OUT_FUSION_BUFFER");
    int64_t at = 0;
    for (auto& e : entries) {
      const int64_t bytes = e.output->size_bytes();
      if (bytes > 0) std::memcpy(e.output->data(), data + at, bytes);
      at += bytes;
    }
  }
  return Status::Ok();
}

Status MpiAdasumAllreduce::ReserveBuffers(int64_t fused_bytes, int64_t half_bytes,
                                          const Response& response) {
  Status reserved = Status::Ok();
  if (fused_bytes > 0) reserved = fusion_buffer_.Reserve(fused_bytes, &fusion_data_);
  if (reserved.ok())
    reserved = received_.Reserve(std::max<int64_t>(half_bytes, 1), &received_data_);
  // Every rank executes the same responses, so all make this decision alike.
  if (fused_bytes <= agreed_fused_bytes_ && half_bytes <= agreed_half_bytes_) return reserved;
  MpiTransport transport(context_);
  HORDE_RETURN_IF_ERROR(AgreeAllSucceeded(&transport, reserved,
                                          OperationName("allreduce", response.names),
                                          RankNames(context_->topology().world_ranks)));
  agreed_fused_bytes_ = std::max(agreed_fused_bytes_, fused_bytes);
  agreed_half_bytes_ = std::max(agreed_half_bytes_, half_bytes);
  return Status::Ok();
}

Status MpiAdasumAllreduce::Reduce(char* data, const adasum::TensorLayout& layout, DataType dtype) {
  const Topology& topology = context_->topology();
  const int64_t element_size = DataTypeSize(dtype);
  // windows[k]: the elements this rank holds before level k; the last, its final piece.
  std::vector<adasum::Window> windows{{0, layout.total()}};
  for (int distance = 1; distance < topology.size; distance <<= 1) {
    adasum::Window window = windows.back();
    HORDE_RETURN_IF_ERROR(ReduceLevel(data, layout, dtype, distance, &window));
    windows.push_back(window);
  }
  // Back up the levels: the partner of each level holds the other half of the window the
  // two shared, now reduced; swapping halves doubles what each holds.
  for (int level = static_cast<int>(windows.size()) - 2; level >= 0; --level) {
    const int distance = 1 << level;
    const bool upper = (topology.rank & distance) != 0;
    const adasum::Window mine = windows[level + 1];
    const adasum::Window theirs = adasum::GivenHalf(windows[level], upper);
    HORDE_RETURN_IF_ERROR(Exchange(context_->world(), topology.rank ^ distance,
                                   data + mine.begin * element_size, mine.count() * element_size,
                                   data + theirs.begin * element_size,
                                   theirs.count() * element_size));
  }
  return Status::Ok();
}

Status MpiAdasumAllreduce::ReduceLevel(char* data, const adasum::TensorLayout& layout,
                                       DataType dtype, int distance, adasum::Window* window) {
  const Topology& topology = context_->topology();
  const int64_t element_size = DataTypeSize(dtype);
  const bool upper = (topology.rank & distance) != 0;
  const adasum::Window keep = adasum::KeptHalf(*window, upper);
  const adasum::Window give = adasum::GivenHalf(*window, upper);
  char* theirs = received_data_;  // holds the largest half (ReserveBuffers)
  char* mine = data + keep.begin * element_size;
  HORDE_RETURN_IF_ERROR(Exchange(context_->world(), topology.rank ^ distance,
                                 data + give.begin * element_size, give.count() * element_size,
                                 theirs, keep.count() * element_size));
  adasum::WindowDots(dtype, layout, keep, mine, theirs, upper, &dots_);
  HORDE_RETURN_IF_ERROR(SumOverGroup(distance));
  adasum::CombineWindow(dtype, layout, keep, mine, theirs, upper, dots_);
  *window = keep;
  return Status::Ok();
}

Status MpiAdasumAllreduce::SumOverGroup(int distance) {
  // Recursive doubling inside the group (ranks equal above bit `distance`): after the
  // step with rank ^ d, each rank holds the sum over the 2d ranks equal above bit d.
  // Both partners add the same two numbers (addition commutes), so every rank of the
  // group ends with bitwise the same sums and the same coefficients.
  const Topology& topology = context_->topology();
  const int64_t bytes = static_cast<int64_t>(dots_.size() * sizeof(adasum::Dots));
  partner_dots_.resize(dots_.size());
  for (int d = 1; d <= distance; d <<= 1) {
    HORDE_RETURN_IF_ERROR(Exchange(context_->world(), topology.rank ^ d,
                                   reinterpret_cast<const char*>(dots_.data()), bytes,
                                   reinterpret_cast<char*>(partner_dots_.data()), bytes));
    for (size_t i = 0; i < dots_.size(); ++i) {
      dots_[i].dot += partner_dots_[i].dot;
      dots_[i].left_norm2 += partner_dots_[i].left_norm2;
      dots_[i].right_norm2 += partner_dots_[i].right_norm2;
    }
  }
  return Status::Ok();
}

}  // namespace mpi
}  // namespace horde
