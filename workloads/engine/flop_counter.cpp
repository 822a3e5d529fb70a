#include "workloads/engine/flop_counter.h"

#include <ATen/record_function.h>
#include <torch/torch.h>

#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

namespace autotune {

namespace {

struct State {
  FlopCount count;
  int depth = 0;  ///< counted ops open on this thread: nested ones are not counted again
};
thread_local State* g_state = nullptr;

/// A counted op's frame: whether it is the outermost counted op (then its end callback counts it), and
/// what it needs of its inputs, read at the start (the inputs are not valid by the end).
struct Frame : at::ObserverContext {
  bool top = false;
  std::vector<std::vector<int64_t>> shapes;  ///< sizes of the first three inputs ({} when not a tensor)
  bool transposed_flag = false;              ///< aten::convolution / _convolution: the `transposed` argument
};

bool is_conv(std::string_view n) {
  return n == "aten::conv1d" || n == "aten::conv2d" || n == "aten::conv3d" || n == "aten::convolution" ||
         n == "aten::_convolution" || n == "aten::conv_transpose1d" || n == "aten::conv_transpose2d" ||
         n == "aten::conv_transpose3d";
}
bool is_counted(std::string_view n) {
  return is_conv(n) || n == "aten::linear" || n == "aten::matmul" || n == "aten::mm" || n == "aten::bmm" || n == "aten::addmm" ||
         n == "aten::baddbmm" || n == "aten::scaled_dot_product_attention";
}

double numel(const std::vector<int64_t>& s) {
  double n = 1;
  for (auto d : s) n *= static_cast<double>(d);
  return n;
}

/// Multiply-adds of one op, from its input shapes and its output.
double macs(std::string_view n, const Frame& f, const at::Tensor* out) {
  const auto& in = f.shapes;
  auto has = [&](size_t i, size_t min_dim) { return i < in.size() && in[i].size() >= min_dim; };
  if (n == "aten::scaled_dot_product_attention") {  // q (…, L, E), k (…, S, E), v (…, S, Ev): QKᵀ and AV
    if (!has(0, 2) || !has(1, 2) || !has(2, 2)) return 0;
    const auto &q = in[0], &k = in[1], &v = in[2];
    const double L = q[q.size() - 2], E = q.back(), S = k[k.size() - 2], Ev = v.back();
    return numel(q) / (L * E) * L * S * (E + Ev);
  }
  if (!out) return 0;
  if (is_conv(n)) {
    // Weight (C_out, C_in/groups, k…), transposed (C_in, C_out/groups, k…): each output element of a
    // convolution — each input element of a transposed one — costs numel(w)/size(w, 0) multiply-adds.
    if (!has(0, 1) || !has(1, 3)) return 0;
    const bool transposed = n.find("transpose") != std::string_view::npos || f.transposed_flag;
    return (transposed ? numel(in[0]) : static_cast<double>(out->numel())) * numel(in[1]) / static_cast<double>(in[1][0]);
  }
  if (n == "aten::linear") return has(1, 1) ? static_cast<double>(out->numel()) * in[1].back() : 0;
  const size_t a = n == "aten::addmm" || n == "aten::baddbmm" ? 1 : 0;
  return has(a, 1) ? static_cast<double>(out->numel()) * in[a].back() : 0;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (!g_state || !is_counted(fn.name())) return nullptr;
  auto f = std::make_unique<Frame>();
  f->top = g_state->depth++ == 0;
  if (!f->top) return f;
  const auto in = fn.inputs();
  for (size_t i = 0; i < in.size() && i < 3; ++i)
    f->shapes.push_back(in[i].isTensor() ? in[i].toTensor().sizes().vec() : std::vector<int64_t>{});
  const std::string_view n = fn.name();
  if ((n == "aten::convolution" || n == "aten::_convolution") && in.size() > 6 && in[6].isBool())
    f->transposed_flag = in[6].toBool();
  return f;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext* ctx) {
  auto* f = static_cast<Frame*>(ctx);
  if (!g_state || !f) return;
  --g_state->depth;
  if (!f->top) return;
  const std::string_view n = fn.name();
  const auto& outs = fn.outputs();
  const double flops = 2 * macs(n, *f, !outs.empty() && outs[0].isTensor() ? &outs[0].toTensor() : nullptr);
  g_state->count.forward_flops += flops;
  g_state->count.by_op[std::string(n)] += flops;
  if (is_conv(n)) g_state->count.saw_convolution = true;
}

}  // namespace

FlopCount count_forward_flops(const std::function<void()>& forward) {
  State state;
  g_state = &state;
  const at::CallbackHandle h =
      at::addThreadLocalCallback(at::RecordFunctionCallback(on_start, on_end).needsInputs(true).needsOutputs(true));
  try {
    forward();
  } catch (...) {
    at::removeCallback(h);
    g_state = nullptr;
    throw;
  }
  at::removeCallback(h);
  g_state = nullptr;
  return state.count;
}

}  // namespace autotune
