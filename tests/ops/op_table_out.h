#pragma once
// The out= variants of the op table: each `op.out` schema runs on the args of its functional
// entry's samples (with the fixed extra arguments written here) and must give what the
// functional op gives, into an empty `out` (resized) and into an `out` of the right size with
// other strides (kept), on the CPU, every backend present and Meta. test_op_table.cpp also
// checks that out= refuses inputs requiring grad, as in PyTorch, and an `out` of a dtype the
// result cannot be cast to. See Note [Out variants and autograd] in ops/structured.h.
#include "op_table.h"

namespace strata::optable {

struct OutVariant {
  std::string name;        // "strata::sin.out"
  std::string functional;  // the entry whose sample args it runs on: "strata::sin"
  std::function<Tensor(const tensor_list& in)> call;                       // the functional form
  std::function<void(const Tensor& out, const tensor_list& in)> call_out;  // the same into `out`
};

#define STRATA_UNARY_OUT(op)                                                                \
  OutVariant {                                                                              \
    "strata::" #op ".out", "strata::" #op, [](const tensor_list& in) { return op(in[0]); }, \
        [](const Tensor& out, const tensor_list& in) { op##_out(out, in[0]); }              \
  }
#define STRATA_BINARY_OUT(op, name, entry)                                               \
  OutVariant {                                                                           \
    name, entry, [](const tensor_list& in) { return op(in[0], in[1]); },                 \
        [](const Tensor& out, const tensor_list& in) { op##_out(out, in[0], in[1]); }    \
  }

inline const std::vector<OutVariant>& out_variants() {
  static const std::vector<OutVariant> variants = {
      OutVariant{"strata::add.out", "strata::add.Tensor", [](const tensor_list& in) { return add(in[0], in[1], 2); },
                 [](const Tensor& out, const tensor_list& in) { add_out(out, in[0], in[1], 2); }},
      OutVariant{"strata::sub.out", "strata::sub.Tensor", [](const tensor_list& in) { return sub(in[0], in[1], 3); },
                 [](const Tensor& out, const tensor_list& in) { sub_out(out, in[0], in[1], 3); }},
      STRATA_BINARY_OUT(mul, "strata::mul.out", "strata::mul.Tensor"),
      STRATA_BINARY_OUT(div, "strata::div.out", "strata::div.Tensor"),
      STRATA_BINARY_OUT(maximum, "strata::maximum.out", "strata::maximum"),
      STRATA_BINARY_OUT(minimum, "strata::minimum.out", "strata::minimum"),
      STRATA_BINARY_OUT(pow, "strata::pow.Tensor_Tensor_out", "strata::pow.Tensor_Tensor"),
      STRATA_BINARY_OUT(mm, "strata::mm.out", "strata::mm"),
      STRATA_BINARY_OUT(bmm, "strata::bmm.out", "strata::bmm"),
      STRATA_BINARY_OUT(matmul, "strata::matmul.out", "strata::matmul"),
      STRATA_UNARY_OUT(neg),
      STRATA_UNARY_OUT(abs),
      STRATA_UNARY_OUT(sign),
      STRATA_UNARY_OUT(exp),
      STRATA_UNARY_OUT(log),
      STRATA_UNARY_OUT(sqrt),
      STRATA_UNARY_OUT(rsqrt),
      STRATA_UNARY_OUT(sin),
      STRATA_UNARY_OUT(cos),
      STRATA_UNARY_OUT(tanh),
      STRATA_UNARY_OUT(sigmoid),
      STRATA_UNARY_OUT(silu),
      OutVariant{"strata::gelu.out", "strata::gelu", [](const tensor_list& in) { return gelu(in[0], "tanh"); },
                 [](const Tensor& out, const tensor_list& in) { gelu_out(out, in[0], "tanh"); }},
      OutVariant{"strata::clamp.out", "strata::clamp", [](const tensor_list& in) { return clamp(in[0], -1, 1); },
                 [](const Tensor& out, const tensor_list& in) { clamp_out(out, in[0], -1, 1); }},
      OutVariant{"strata::pow.Tensor_Scalar_out", "strata::pow.Tensor_Scalar",
                 [](const tensor_list& in) { return pow(in[0], 2); },
                 [](const Tensor& out, const tensor_list& in) { pow_out(out, in[0], 2); }},
      OutVariant{"strata::sum.IntList_out", "strata::sum.dim_IntList",
                 [](const tensor_list& in) { return sum(in[0], {0}, true); },
                 [](const Tensor& out, const tensor_list& in) { sum_out(out, in[0], {0}, true); }},
      OutVariant{"strata::mean.out", "strata::mean.dim", [](const tensor_list& in) { return mean(in[0], {-1}); },
                 [](const Tensor& out, const tensor_list& in) { mean_out(out, in[0], {-1}); }},
      OutVariant{"strata::cat.out", "strata::cat", [](const tensor_list& in) { return cat(in, 0); },
                 [](const Tensor& out, const tensor_list& in) { cat_out(out, in, 0); }},
      OutVariant{"strata::index_select.out", "strata::index_select",
                 [](const tensor_list& in) { return index_select(in[0], 0, in[1]); },
                 [](const Tensor& out, const tensor_list& in) { index_select_out(out, in[0], 0, in[1]); }},
  };
  return variants;
}

#undef STRATA_UNARY_OUT
#undef STRATA_BINARY_OUT

}  // namespace strata::optable
