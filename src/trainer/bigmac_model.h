#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/layer_split.h"

namespace bigmac::trainer {

/// Sizes of the model, from `[model]` plus the sequence length of `[train]`.
struct ModelShape {
  int num_layers = 4;
  int hidden = 64;
  int heads = 4;
  int vocab = 64;
  int ffn_mult = 4;
  int seq_length = 32;
  bool tie_embeddings = true;
};

/// One pre-norm transformer block: causal multi-head self-attention and a GELU MLP, each in a
/// residual branch. `layer_id` is its position in the whole model and never changes, whichever
/// pipeline stage holds the block.
class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(const ModelShape& shape, int layer_id);
  /// [batch, seq, hidden] -> [batch, seq, hidden]
  torch::Tensor forward(const torch::Tensor& x);
  int layer_id() const { return layer_id_; }

 private:
  int layer_id_;
  int heads_;
  torch::nn::LayerNorm ln1_{nullptr}, ln2_{nullptr};
  torch::nn::Linear qkv_{nullptr}, attn_out_{nullptr}, fc_{nullptr}, fc_out_{nullptr};
};
TORCH_MODULE(Block);

/// The decoder-only transformer "BigMac": token + position embedding, `num_layers` blocks in
/// layer_id order, final norm, LM head (the token embedding itself when tied). Its three parts
/// are separate calls so that a pipeline stage can run only the ones it owns.
class BigMacImpl : public torch::nn::Module {
 public:
  explicit BigMacImpl(const ModelShape& shape);

  /// tokens [batch, seq] int64 -> hidden [batch, seq, hidden]
  torch::Tensor embed(const torch::Tensor& tokens);
  /// Runs blocks first..last (inclusive layer_ids) over `hidden`.
  torch::Tensor run_layers(torch::Tensor hidden, int first, int last);
  /// Final norm and LM head: hidden -> logits [batch, seq, vocab]
  torch::Tensor head(const torch::Tensor& hidden);
  /// embed, every layer, head.
  torch::Tensor forward(const torch::Tensor& tokens);

  /// Sets every parameter from `seed` alone (GPT-2 style: N(0, 0.02) matrices, zero biases, unit
  /// norms), in name order, so every rank of every layout holds identical initial weights.
  void initialize(std::uint64_t seed, double init_std = 0.02);

  const ModelShape& shape() const { return shape_; }
  int num_layers() const { return static_cast<int>(blocks_->size()); }
  Block layer(int layer_id) const { return blocks_->ptr<BlockImpl>(layer_id); }

 private:
  ModelShape shape_;
  torch::nn::Embedding token_embedding_{nullptr}, position_embedding_{nullptr};
  torch::nn::ModuleList blocks_{nullptr};
  torch::nn::LayerNorm final_norm_{nullptr};
  torch::nn::Linear lm_head_{nullptr};  ///< null when tied to the token embedding
};
TORCH_MODULE(BigMac);

/// The weight shared by the token embedding and a tied LM head.
inline constexpr const char* kTiedWeight = "token_embedding.weight";

/// The named parameters a pipeline stage owns, in model order: the first stage the embeddings,
/// every stage its layers, the last the final norm and head (with a tied head, its own copy of
/// the token embedding). One stage that is both first and last owns everything.
std::vector<std::pair<std::string, torch::Tensor>> stage_parameters(const BigMacImpl& model,
                                                                    LayerRange layers, bool first,
                                                                    bool last);

/// Number of scalar parameters (a tied weight counts once: it is one parameter).
std::int64_t param_count(const torch::nn::Module& module);

/// 64-bit FNV-1a over every parameter's name, shape and float32 bytes in name order, as 16 hex
/// digits. Equal on two ranks exactly when they hold bit-identical parameters.
std::string param_digest(const torch::nn::Module& module);

/// The same digest over a chosen list of named parameters (what one pipeline stage holds).
std::string param_digest(const std::vector<std::pair<std::string, torch::Tensor>>& named);

/// 16 hex digits of a tensor's shape and values (its bytes on the host, as stored): a
/// micro-batch's `input_digest`, equal on two ranks exactly when they read the same samples.
std::string tensor_digest(const at::Tensor& tensor);

/// The samples of a batch as a set: how many rows `tokens` [batch, ...] holds, and the sum
/// (mod 2^64) of a 64-bit FNV-1a of each row's length and bytes. Sums over the micro-batches and
/// the ranks of a step add up to the step's whatever the order: `sample_count`/`sample_digest`.
struct SampleSet {
  std::int64_t count = 0;
  std::uint64_t digest = 0;
  void add(const at::Tensor& tokens);
};

/// Mean next-token cross-entropy of logits [batch, seq, vocab] against labels [batch, seq].
torch::Tensor next_token_loss(const torch::Tensor& logits, const torch::Tensor& labels);

}  // namespace bigmac::trainer
