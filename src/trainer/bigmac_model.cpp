#include "trainer/bigmac_model.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/util/irange.h>
#include <fmt/format.h>
#include <torch/nn/options/linear.h>
#include <torch/nn/options/normalization.h>

#include <cmath>
#include <stdexcept>

namespace bigmac::trainer {
namespace {

void check_shape(const ModelShape& shape) {
  if (shape.num_layers < 1 || shape.hidden < 1 || shape.heads < 1 || shape.vocab < 2 ||
      shape.ffn_mult < 1 || shape.seq_length < 1 || shape.hidden % shape.heads != 0) {
    throw std::invalid_argument(fmt::format(
        "invalid model shape: num_layers {} hidden {} heads {} vocab {} (hidden must divide by "
        "heads)",
        shape.num_layers, shape.hidden, shape.heads, shape.vocab));
  }
}

}  // namespace

BlockImpl::BlockImpl(const ModelShape& shape, int layer_id)
    : layer_id_(layer_id), heads_(shape.heads) {
  const std::int64_t h = shape.hidden;
  ln1_ = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({h})));
  qkv_ = register_module("qkv", torch::nn::Linear(h, 3 * h));
  attn_out_ = register_module("attn_out", torch::nn::Linear(h, h));
  ln2_ = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({h})));
  fc_ = register_module("fc", torch::nn::Linear(h, h * shape.ffn_mult));
  fc_out_ = register_module("fc_out", torch::nn::Linear(h * shape.ffn_mult, h));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x) {
  const auto batch = x.size(0);
  const auto seq = x.size(1);
  const auto hidden = x.size(2);
  const auto head_dim = hidden / heads_;
  auto qkv = qkv_->forward(ln1_->forward(x)).view({batch, seq, 3, heads_, head_dim});
  // [3, batch, heads, seq, head_dim]
  qkv = qkv.permute({2, 0, 3, 1, 4});
  auto q = qkv[0], k = qkv[1], v = qkv[2];
  auto scores = at::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim));
  auto future = at::ones({seq, seq}, x.options().dtype(at::kBool)).triu(1);
  scores = scores.masked_fill(future, -std::numeric_limits<double>::infinity());
  auto attended = at::matmul(at::softmax(scores, -1), v);
  attended = attended.transpose(1, 2).reshape({batch, seq, hidden});
  auto y = x + attn_out_->forward(attended);
  return y + fc_out_->forward(at::gelu(fc_->forward(ln2_->forward(y))));
}

BigMacImpl::BigMacImpl(const ModelShape& shape) : shape_(shape) {
  check_shape(shape);
  token_embedding_ =
      register_module("token_embedding", torch::nn::Embedding(shape.vocab, shape.hidden));
  position_embedding_ =
      register_module("position_embedding", torch::nn::Embedding(shape.seq_length, shape.hidden));
  blocks_ = register_module("blocks", torch::nn::ModuleList());
  for (int id = 0; id < shape.num_layers; ++id) blocks_->push_back(Block(shape, id));
  final_norm_ = register_module("final_norm",
                                torch::nn::LayerNorm(torch::nn::LayerNormOptions({shape.hidden})));
  if (!shape.tie_embeddings) {
    lm_head_ = register_module(
        "lm_head",
        torch::nn::Linear(torch::nn::LinearOptions(shape.hidden, shape.vocab).bias(false)));
  }
}

torch::Tensor BigMacImpl::embed(const torch::Tensor& tokens) {
  auto positions = at::arange(tokens.size(1), tokens.options());
  return token_embedding_->forward(tokens) + position_embedding_->forward(positions);
}

torch::Tensor BigMacImpl::run_layers(torch::Tensor hidden, int first, int last) {
  for (int id = first; id <= last; ++id) hidden = layer(id)->forward(hidden);
  return hidden;
}

torch::Tensor BigMacImpl::head(const torch::Tensor& hidden) {
  auto normed = final_norm_->forward(hidden);
  if (lm_head_) return lm_head_->forward(normed);
  return at::matmul(normed, token_embedding_->weight.t());
}

torch::Tensor BigMacImpl::forward(const torch::Tensor& tokens) {
  return head(run_layers(embed(tokens), 0, num_layers() - 1));
}

void BigMacImpl::initialize(std::uint64_t seed, double init_std) {
  at::NoGradGuard no_grad;
  // A private generator: the global torch seed stays untouched and the result depends on the
  // seed and the parameter order only.
  auto generator = at::detail::createCPUGenerator(seed);
  for (auto& item : named_parameters(/*recurse=*/true)) {
    auto& param = item.value();
    const std::string& name = item.key();
    if (param.dim() >= 2) {
      param.normal_(0.0, init_std, generator);
    } else if (name.ends_with("bias")) {
      param.zero_();
    } else {
      param.fill_(1.0);
    }
  }
}

std::vector<std::pair<std::string, torch::Tensor>> stage_parameters(const BigMacImpl& model,
                                                                    LayerRange layers, bool first,
                                                                    bool last) {
  std::vector<std::pair<std::string, torch::Tensor>> owned;
  for (const auto& item : model.named_parameters(/*recurse=*/true)) {
    const std::string& name = item.key();
    bool own = false;
    if (name.starts_with("token_embedding.") || name.starts_with("position_embedding.")) {
      own = first || (last && name == kTiedWeight && model.shape().tie_embeddings);
    } else if (name.starts_with("blocks.")) {
      own = layers.contains(std::stoi(name.substr(7)));
    } else {
      own = last;  // final_norm, lm_head
    }
    if (own) owned.emplace_back(name, item.value());
  }
  return owned;
}

std::int64_t param_count(const torch::nn::Module& module) {
  std::int64_t count = 0;
  for (const auto& param : module.parameters(/*recurse=*/true)) count += param.numel();
  return count;
}

std::string param_digest(const torch::nn::Module& module) {
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    named.emplace_back(item.key(), item.value());
  }
  return param_digest(named);
}

namespace {

// FNV-1a, 64 bits, over a byte range.
struct Fnv {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  void operator()(const void* data, std::size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < size; ++i) {
      hash ^= bytes[i];
      hash *= 0x100000001b3ULL;
    }
  }
};

}  // namespace

std::string tensor_digest(const at::Tensor& tensor) {
  Fnv mix;
  for (auto dim : tensor.sizes()) mix(&dim, sizeof(dim));
  const auto values = tensor.detach().to(at::kCPU).contiguous();
  mix(values.data_ptr(), static_cast<std::size_t>(values.numel()) * values.element_size());
  return fmt::format("{:016x}", mix.hash);
}

void SampleSet::add(const at::Tensor& tokens) {
  const auto rows = tokens.detach().to(at::kCPU).contiguous();
  const std::int64_t n = rows.dim() == 0 ? 1 : rows.size(0);
  const std::size_t row_bytes =
      n == 0 ? 0 : static_cast<std::size_t>(rows.numel() / n) * rows.element_size();
  const auto* bytes = static_cast<const unsigned char*>(rows.data_ptr());
  for (std::int64_t i = 0; i < n; ++i) {
    Fnv mix;
    mix(&row_bytes, sizeof row_bytes);
    mix(bytes + static_cast<std::size_t>(i) * row_bytes, row_bytes);
    digest += mix.hash;
  }
  count += n;
}

std::string param_digest(const std::vector<std::pair<std::string, torch::Tensor>>& named) {
  Fnv mix;
  for (const auto& [name, param] : named) {
    mix(name.data(), name.size());
    for (auto dim : param.sizes()) mix(&dim, sizeof(dim));
    auto values = param.detach().to(at::kCPU, at::kFloat).contiguous();
    mix(values.data_ptr(), static_cast<std::size_t>(values.numel()) * sizeof(float));
  }
  return fmt::format("{:016x}", mix.hash);
}

torch::Tensor next_token_loss(const torch::Tensor& logits, const torch::Tensor& labels) {
  auto flat = logits.reshape({-1, logits.size(-1)});
  return at::nll_loss(at::log_softmax(flat, -1), labels.reshape({-1}));
}

}  // namespace bigmac::trainer
