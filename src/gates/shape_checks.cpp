#include "gates/shape_checks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <span>
#include <tuple>

#include "baseline/stage_layout.h"
#include "gates/observability.h"
#include "launch/trainer_invocation.h"

namespace bigmac::gates {
namespace {

std::string describe(const logs::ShapeRecord& s) {
  return fmt::format("stage {} mb {} {} {} [{}] {} {}", s.stage, s.mb, s.where, s.name,
                     fmt::join(s.shape, ","), s.dtype, s.device);
}

using Key = std::tuple<std::int64_t, int, int, std::string>;  // step, stage, mb, where

/// A point-to-point transfer the probe traced (name `p2p`, with the other rank as `peer`).
bool is_transfer(const logs::ShapeRecord& s) { return s.name == "p2p" && s.peer >= 0; }

/// Whether every traced shape is such a transfer: a hand-written pipeline seen by the probe,
/// whose labels and logits nobody traced.
bool transfers_only(const GateEvidence& e) {
  for (const RankEvidence& r : e.ranks) {
    for (const logs::ShapeRecord& s : r.shapes) {
      if (s.name != "p2p") return false;
    }
  }
  return true;
}

std::map<Key, const logs::ShapeRecord*> hidden_by_key(const GateEvidence& e) {
  std::map<Key, const logs::ShapeRecord*> out;
  for (const RankEvidence& r : e.ranks) {
    for (const logs::ShapeRecord& s : r.shapes) {
      if (s.name == "hidden_states") out.emplace(Key{s.global_step, s.stage, s.mb, s.where}, &s);
    }
  }
  return out;
}

// The last stage as the diagnosis names it too: the plan's (baseline::last_stage).
int last_stage(const CheckContext& ctx) {
  return baseline::last_stage(
             ctx.plan.config.parallel.pp_size,
             baseline::stage_layouts(std::span<const RankEvidence>(ctx.evidence.ranks)))
      .value_or(0);
}

}  // namespace

CheckResult check_shape_chain(const CheckContext& ctx) {
  const char* name = "shape_chain";
  const auto shapes = hidden_by_key(ctx.evidence);
  std::int64_t pairs = 0;
  const std::pair<const char*, const char*> links[] = {{"exit", "enter"}, {"send", "recv"}};
  for (const auto& [key, out] : shapes) {
    const auto& [step, stage, mb, where] = key;
    for (const auto& [from, to] : links) {
      if (where != from) continue;
      auto in = shapes.find(Key{step, stage + 1, mb, to});
      if (in == shapes.end()) continue;
      ++pairs;
      if (out->shape != in->second->shape || out->dtype != in->second->dtype) {
        return certain(
            fail(name,
                 fmt::format("step {} micro-batch {}: stage {} {}s [{}] {} but stage {} {}s "
                             "[{}] {}",
                             step, mb, stage, from, fmt::join(out->shape, ","), out->dtype,
                             stage + 1, to, fmt::join(in->second->shape, ","), in->second->dtype),
                 {evidence_of(*out, describe(*out)),
                  evidence_of(*in->second, describe(*in->second))}),
            step);
      }
    }
  }
  // The probe's point-to-point transfers (a hand-written pipeline, docs/pipelines.md): a send
  // to rank P is the same tensor as P's receive from the sender with the same index, forward
  // (activations) and backward (gradients) alike.
  using Transfer = std::tuple<std::int64_t, int, int, std::int64_t>;  // step, from, to, index
  std::map<Transfer, const logs::ShapeRecord*> sent;
  for (const RankEvidence& r : ctx.evidence.ranks) {
    for (const logs::ShapeRecord& s : r.shapes) {
      if (is_transfer(s) && s.where == "send")
        sent.emplace(Transfer{s.global_step, r.rank, s.peer, s.mb}, &s);
    }
  }
  for (const RankEvidence& r : ctx.evidence.ranks) {
    for (const logs::ShapeRecord& in : r.shapes) {
      if (!is_transfer(in) || in.where != "recv") continue;
      const auto out = sent.find(Transfer{in.global_step, in.peer, r.rank, in.mb});
      if (out == sent.end()) continue;
      ++pairs;
      const logs::ShapeRecord& s = *out->second;
      if (s.shape != in.shape || s.dtype != in.dtype) {
        return certain(
            fail(name,
                 fmt::format("step {} transfer {} from rank {} to rank {}: sent [{}] {} "
                             "but received into [{}] {}",
                             in.global_step, in.mb, in.peer, r.rank, fmt::join(s.shape, ","),
                             s.dtype, fmt::join(in.shape, ","), in.dtype),
                 {evidence_of(s, describe(s)), evidence_of(in, describe(in))}),
            in.global_step);
      }
    }
  }
  if (pairs == 0) {
    const char* message =
        "no stage boundary with hidden_states traced on both sides: nothing to compare (is "
        "trace.shapes on and pp > 1?)";
    if (logged_nowhere<logs::ShapeRecord>(ctx.evidence))
      return not_logged(ctx.evidence, name, message, {"shape"});
    return fail(name, message);
  }
  return pass(name,
              fmt::format("{} stage boundaries: sender's shape and dtype = receiver's", pairs));
}

CheckResult check_fixed_seq_length(const CheckContext& ctx) {
  const char* name = "fixed_seq_length";
  // Dimension 1 is read as the sequence only against a length the trainer was given, or logs
  // itself: a program whose command names no {seq_length} and that logs none may have no
  // sequence at all (an MLP's features), and failing it would judge a guess.
  std::int64_t seq = ctx.plan.config.train.seq_length;
  if (!launch::trainer_receives(ctx.plan.config, "seq_length")) {
    seq = 0;
    for (const RankEvidence& r : ctx.evidence.ranks) {
      for (const logs::BatchRecord& b : r.batches) {
        if (seq == 0 && b.seq_length > 0) seq = b.seq_length;
      }
    }
    if (seq == 0) {
      return not_logged(ctx.evidence, name,
                        "the trainer logs no sequence length and was not given train.seq_length "
                        "(no {seq_length} in its command): which dimension is the sequence, if "
                        "any, is not known",
                        {"seq_length"});
    }
  }
  std::int64_t checked = 0;
  for (const RankEvidence& r : ctx.evidence.ranks) {
    for (const logs::BatchRecord& b : r.batches) {
      ++checked;
      // seq_length 0: not logged (the probe cannot tell which dimension is the sequence).
      if ((b.seq_length != 0 && b.seq_length != seq) ||
          (b.input_shape.size() >= 2 && b.input_shape[1] != seq)) {
        return certain(fail(name,
                            fmt::format("rank {} batch has seq_length {} (input [{}]), expected {}",
                                        r.rank, b.seq_length, fmt::join(b.input_shape, ","), seq),
                            {evidence_of(b, "batch")}),
                       -1);
      }
    }
    for (const logs::ShapeRecord& s : r.shapes) {
      if (s.shape.size() < 2) continue;
      ++checked;
      if (s.shape[1] != seq) {
        return certain(fail(name,
                            fmt::format("step {} {}: sequence length {}, expected {} (ragged "
                                        "tail or a trimmed boundary?)",
                                        s.global_step, describe(s), s.shape[1], seq),
                            {evidence_of(s, describe(s))}),
                       s.global_step);
      }
    }
  }
  if (checked == 0)
    return not_logged(ctx.evidence, name, "no batch or shape event: nothing to check", {"shape"});
  return pass(name,
              fmt::format("sequence length {} in all {} traced tensors and batches", seq, checked));
}

CheckResult check_labels_last_stage_only(const CheckContext& ctx) {
  const char* name = "labels_last_stage_only";
  const int last = last_stage(ctx);
  std::map<std::tuple<std::int64_t, int>, const logs::ShapeRecord*> logits;
  for (const RankEvidence& r : ctx.evidence.ranks) {
    for (const logs::ShapeRecord& s : r.shapes) {
      if (s.name == "logits") logits.emplace(std::tuple{s.global_step, s.mb}, &s);
    }
  }
  std::int64_t labels = 0;
  for (const RankEvidence& r : ctx.evidence.ranks) {
    for (const logs::ShapeRecord& s : r.shapes) {
      if (s.name != "labels" && s.where != "labels") continue;
      ++labels;
      if (s.stage != last) {
        return certain(fail(name,
                            fmt::format("labels logged on stage {}, only the last stage ({}) "
                                        "may hold them",
                                        s.stage, last),
                            {evidence_of(s, describe(s))}),
                       s.global_step);
      }
      auto it = logits.find(std::tuple{s.global_step, s.mb});
      if (it == logits.end()) {
        return fail(
            name, fmt::format("step {} micro-batch {}: labels without logits", s.global_step, s.mb),
            {evidence_of(s, describe(s))});
      }
      const auto& l = it->second->shape;
      if (s.shape.size() < 2 || l.size() < 2 || s.shape[0] != l[0] || s.shape[1] != l[1]) {
        return certain(
            fail(name,
                 fmt::format("step {} micro-batch {}: labels [{}] do not match logits [{}]",
                             s.global_step, s.mb, fmt::join(s.shape, ","), fmt::join(l, ",")),
                 {evidence_of(s, describe(s)), evidence_of(*it->second, describe(*it->second))}),
            s.global_step);
      }
    }
  }
  if (labels == 0) {
    const char* message = "no labels traced: nothing to check (is trace.shapes on?)";
    if (logged_nowhere<logs::ShapeRecord>(ctx.evidence))
      return not_logged(ctx.evidence, name, message, {"shape"});
    if (transfers_only(ctx.evidence)) {
      return not_logged(ctx.evidence, name,
                        "only point-to-point transfers were traced (a hand-written pipeline): "
                        "where the labels enter is not known",
                        {"shape"});
    }
    return fail(name, message);
  }
  return pass(name, fmt::format("{} labels, all on the last stage {}, each matching its logits",
                                labels, last));
}

CheckResult check_no_middle_stage_loss(const CheckContext& ctx) {
  const char* name = "no_middle_stage_loss";
  const int last = last_stage(ctx);
  const std::span<const RankEvidence> ranks(ctx.evidence.ranks);
  if (const logs::LossRecord* l = baseline::first_loss_off_last_stage(ranks, last).record) {
    return certain(
        fail(name,
             fmt::format("stage {} computed a loss at step {} micro-batch {}; only the "
                         "last stage ({}) may",
                         l->stage, l->global_step, l->mb, last),
             {evidence_of(*l, fmt::format("loss stage={} value={}", l->stage, l->value))}),
        l->global_step);
  }
  std::int64_t losses = 0;
  for (const RankEvidence& r : ranks) losses += static_cast<std::int64_t>(r.losses.size());
  if (losses == 0)
    return not_logged(ctx.evidence, name, "no `loss` event: nothing to check", {"stage_loss"});
  return pass(name, fmt::format("{} losses, all on the last stage {}", losses, last));
}

}  // namespace bigmac::gates
