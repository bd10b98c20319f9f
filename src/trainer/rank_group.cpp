#include "trainer/rank_group.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif
#ifdef BIGMAC_HAVE_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef BIGMAC_HAVE_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace bigmac::trainer {
namespace {

c10::intrusive_ptr<c10d::Store> make_store(const GroupOptions& options) {
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<std::uint16_t>(options.master_port);
  store_options.timeout = options.timeout;
  c10::intrusive_ptr<c10d::Store> store;
  if (options.agent_store) {
    // torchrun's agent serves the store already; the workers' keys live under this prefix.
    store_options.isServer = false;
    store = c10::make_intrusive<c10d::TCPStore>(options.master_addr, store_options);
    store =
        c10::make_intrusive<c10d::PrefixStore>("/worker/attempt_" + options.restart_count, store);
  } else {
    store_options.isServer = options.rank == 0;
    store_options.numWorkers = static_cast<std::size_t>(options.world_size);
    // The Gloo connection below waits for every peer anyway; waiting here as well would make a
    // broken rendezvous take two timeouts to fail.
    store_options.waitWorkers = false;
    store_options.multiTenant = true;
    store = c10::make_intrusive<c10d::TCPStore>(options.master_addr, store_options);
  }
  return c10::make_intrusive<c10d::PrefixStore>("bigmac/", store);
}

#ifdef BIGMAC_HAVE_GLOO
std::shared_ptr<::gloo::transport::Device> gloo_device(const std::string& master_addr) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname != nullptr && *ifname) {
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  }
  // On one host the loopback address always works, while the default device binds to whatever
  // the hostname resolves to.
  if (master_addr == "127.0.0.1" || master_addr == "localhost") {
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  }
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

/// A Gloo group of `size` ranks over `store`.
c10::intrusive_ptr<Collectives> gloo_group(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                           int size, std::chrono::milliseconds timeout,
                                           const std::string& master_addr) {
  auto gloo_options = c10d::ProcessGroupGloo::Options::create(timeout);
  gloo_options->devices.push_back(gloo_device(master_addr));
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, gloo_options);
}
#else
c10::intrusive_ptr<Collectives> gloo_group(const c10::intrusive_ptr<c10d::Store>&, int, int,
                                           std::chrono::milliseconds, const std::string&) {
  throw std::runtime_error("this bigmac-train was built without Gloo (no Gloo headers)");
}
#endif

/// An NCCL group of `size` ranks over `store` (one GPU per rank).
c10::intrusive_ptr<Collectives> nccl_group(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                           int size, std::chrono::milliseconds timeout) {
#ifdef BIGMAC_HAVE_NCCL
  auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
  nccl_options->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, nccl_options);
#else
  static_cast<void>(store);
  static_cast<void>(rank);
  static_cast<void>(size);
  static_cast<void>(timeout);
  throw std::runtime_error("this bigmac-train was built without NCCL (CPU LibTorch)");
#endif
}

}  // namespace

std::unique_ptr<RankGroup> RankGroup::connect(const GroupOptions& options) {
  std::unique_ptr<RankGroup> group(new RankGroup());
  group->rank_ = options.rank;
  group->size_ = options.world_size;
  for (int r = 0; r < options.world_size; ++r) group->members_.push_back(r);
  group->key_ = "world";
  group->backend_ = options.backend;
  group->bucket_bytes_ = options.bucket_bytes;
  if (options.rank < 0 || options.rank >= options.world_size) {
    throw std::runtime_error(
        fmt::format("rank {} is outside world size {}", options.rank, options.world_size));
  }
  group->timeout_ = options.timeout;
  group->master_addr_ = options.master_addr;
  group->store_ = make_store(options);
  if (options.backend == "gloo") {
    group->group_ = gloo_group(group->store_, options.rank, options.world_size, options.timeout,
                               options.master_addr);
  } else if (options.backend == "nccl") {
    group->group_ = nccl_group(group->store_, options.rank, options.world_size, options.timeout);
  } else {
    throw std::runtime_error(fmt::format("unknown backend '{}'", options.backend));
  }
  return group;
}

RankGroup::~RankGroup() = default;

std::string dtype_name(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
      return "float32";
    case at::kDouble:
      return "float64";
    case at::kHalf:
      return "float16";
    case at::kBFloat16:
      return "bfloat16";
    case at::kLong:
      return "int64";
    case at::kInt:
      return "int32";
    case at::kBool:
      return "bool";
    default:
      return c10::toString(type);
  }
}

void RankGroup::log_call(std::string_view op, const std::string& group, const at::Tensor& tensor,
                         const std::source_location& where) const {
  if (ledger_ == nullptr) return;
  std::vector<std::int64_t> shape;
  std::string dtype;
  if (tensor.defined()) {
    shape.assign(tensor.sizes().begin(), tensor.sizes().end());
    dtype = dtype_name(tensor.scalar_type());
  }
  ledger_->record(op, group, shape, dtype, where);
}

void RankGroup::all_reduce_sum(const std::vector<at::Tensor>& tensors, std::source_location where) {
  // Pack consecutive tensors into buckets so that a model of many small tensors costs a few
  // collectives instead of one per parameter.
  std::vector<std::vector<at::Tensor>> buckets;
  std::size_t filled = bucket_bytes_;
  for (const auto& tensor : tensors) {
    auto bytes = static_cast<std::size_t>(tensor.numel()) * tensor.element_size();
    if (buckets.empty() || filled + bytes > bucket_bytes_) {
      buckets.emplace_back();
      filled = 0;
    }
    buckets.back().push_back(tensor);
    filled += bytes;
  }
  std::vector<at::Tensor> flats;
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  for (const auto& bucket : buckets) {
    std::vector<at::Tensor> views;
    views.reserve(bucket.size());
    for (const auto& tensor : bucket) views.push_back(tensor.reshape({-1}));
    std::vector<at::Tensor> flat{at::cat(views)};
    log_call("all_reduce", key_, flat.front(), where);
    works.push_back(group_->allreduce(flat));
    flats.push_back(flat.front());
  }
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    works[b]->wait();
    std::int64_t offset = 0;
    for (auto& tensor : buckets[b]) {
      auto count = tensor.numel();
      tensor.copy_(flats[b].narrow(0, offset, count).view_as(tensor));
      offset += count;
    }
  }
}

void RankGroup::barrier(std::source_location where) {
  log_call("barrier", key_, at::Tensor(), where);
  group_->barrier()->wait();
}

}  // namespace bigmac::trainer

namespace bigmac::trainer {

void RankGroup::send(const at::Tensor& tensor, int peer, int tag, std::source_location where) {
  std::vector<at::Tensor> tensors{tensor.contiguous()};
  log_call("send", channel_key(members_[rank_], members_[peer]), tensors.front(), where);
  pending_sends_.push_back(group_->send(tensors, peer, tag));
}

void RankGroup::recv(at::Tensor& tensor, int peer, int tag, std::source_location where) {
  std::vector<at::Tensor> tensors{tensor};
  log_call("recv", channel_key(members_[peer], members_[rank_]), tensor, where);
  group_->recv(tensors, peer, tag)->wait();
}

void RankGroup::wait_sends() {
  for (auto& work : pending_sends_) work->wait();
  pending_sends_.clear();
}

}  // namespace bigmac::trainer

namespace bigmac::trainer {

std::unique_ptr<RankGroup> RankGroup::subgroup(const std::string& name,
                                               const std::vector<int>& members) {
  std::unique_ptr<RankGroup> group(new RankGroup());
  auto it = std::find(members.begin(), members.end(), rank_);
  if (it == members.end()) throw std::logic_error("subgroup without this rank: " + name);
  group->rank_ = static_cast<int>(it - members.begin());
  group->size_ = static_cast<int>(members.size());
  for (int member : members) group->members_.push_back(members_.at(member));
  // Named by its members even when they are all the ranks, as the probe names a group that is
  // not the default one: its calls are numbered apart from the world group's.
  group->key_ = fmt::format("{}", fmt::join(group->members_, ","));
  group->ledger_ = ledger_;
  group->backend_ = backend_;
  group->bucket_bytes_ = bucket_bytes_;
  group->timeout_ = timeout_;
  group->master_addr_ = master_addr_;
  group->store_ = c10::make_intrusive<c10d::PrefixStore>(name + "/", store_);
  if (backend_ == "gloo") {
    group->group_ = gloo_group(group->store_, group->rank_, group->size_, timeout_, master_addr_);
  } else {
    group->group_ = nccl_group(group->store_, group->rank_, group->size_, timeout_);
  }
  return group;
}

}  // namespace bigmac::trainer
