#pragma once

#include <ATen/Tensor.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/version.h>

#include <chrono>
#include <memory>
#include <source_location>
#include <string>
#include <vector>

#include "trainer/collective_ledger.h"

namespace c10d {
class Backend;
class ProcessGroup;
class Store;
class Work;
}  // namespace c10d

namespace bigmac::trainer {
// LibTorch 2 made ProcessGroupGloo/NCCL backends of a ProcessGroup; both expose the collectives
// and point-to-point calls used here.
#if TORCH_VERSION_MAJOR >= 2
using Collectives = c10d::Backend;
#else
using Collectives = c10d::ProcessGroup;
#endif
}  // namespace bigmac::trainer

namespace bigmac::trainer {

/// The probe's spelling of a dtype (torch's `str(dtype)` without "torch."): "float32",
/// "bfloat16", "int64". Logged shapes and ledgers are compared whichever program wrote them.
std::string dtype_name(at::ScalarType type);

/// How to form the process group. Everything comes from the rank environment and `[launch]`.
struct GroupOptions {
  std::string backend = "gloo";  ///< gloo | nccl (already resolved from auto)
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  int rank = 0;
  int world_size = 1;
  /// Limit for the TCPStore rendezvous and the Gloo connection; 1.13's Gloo also applies it to
  /// each collective, so a peer that stops answering surfaces as an error after this long.
  std::chrono::milliseconds timeout{60000};
  bool agent_store = false;  ///< join torchrun's store as a client under its attempt prefix
  std::string restart_count = "0";
  std::size_t bucket_bytes = 256 * 1024;  ///< gradient all-reduce bucket size
};

/// A c10d process group over a TCPStore rendezvous: the ranks of one data-parallel job.
class RankGroup {
 public:
  /// Rendezvous and connect. Throws (c10::Error / std::runtime_error) when the peers do not show
  /// up within the timeout: a runtime failure, reported on stderr with exit code 1.
  static std::unique_ptr<RankGroup> connect(const GroupOptions& options);
  ~RankGroup();

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& backend() const { return backend_; }

  /// Writes every collective and transfer of this group, and of the subgroups made from it
  /// after, to `ledger` before it goes in (null: none). The ledger must outlive the group.
  void set_ledger(CollectiveLedger* ledger) { ledger_ = ledger; }

  /// Sums `tensors` over all ranks in place. Tensors are packed into flat buckets of at most
  /// bucket_bytes (one collective per bucket, all in flight together) and unpacked after.
  /// `where` (the caller's line) is what the ledger names; the same for the calls below.
  void all_reduce_sum(const std::vector<at::Tensor>& tensors,
                      std::source_location where = std::source_location::current());

  /// Blocks until every rank arrives.
  void barrier(std::source_location where = std::source_location::current());

  /// A group of some of the ranks (`members`, global ranks, this rank among them) over the same
  /// store under the key prefix `name`: e.g. the data-parallel replicas of one pipeline stage.
  /// Every member must create it with the same name and members. Ranks are group-local.
  std::unique_ptr<RankGroup> subgroup(const std::string& name, const std::vector<int>& members);

  /// Starts sending `tensor` to `peer`. Completion is awaited in wait_sends(), so two stages
  /// that send to each other before receiving never deadlock.
  void send(const at::Tensor& tensor, int peer, int tag,
            std::source_location where = std::source_location::current());
  /// Receives into `tensor` (its shape and dtype must match the sender's) from `peer`; blocks.
  void recv(at::Tensor& tensor, int peer, int tag,
            std::source_location where = std::source_location::current());
  /// Waits for every send started so far.
  void wait_sends();

 private:
  RankGroup() = default;
  /// The ledger entry of one call with `tensor` as its input (undefined: none).
  void log_call(std::string_view op, const std::string& group, const at::Tensor& tensor,
                const std::source_location& where) const;
  int rank_ = 0;
  int size_ = 1;
  std::string backend_;
  std::size_t bucket_bytes_ = 0;
  std::chrono::milliseconds timeout_{0};
  std::string master_addr_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<Collectives> group_;
  std::vector<c10::intrusive_ptr<c10d::Work>> pending_sends_;
  std::vector<int> members_;  ///< the global rank of each group rank
  std::string key_;           ///< "world" or the members' global ranks: the ledger's group
  CollectiveLedger* ledger_ = nullptr;
};

}  // namespace bigmac::trainer
