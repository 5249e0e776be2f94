// The error catalogue, part 1: tensors and every op family. Each row is one bad call from the
// public API; see error_catalogue.h for what a row asserts. Part 2 (dispatch, autograd, I/O,
// loading) is in test_error_catalogue_system.cpp.
#include <limits>
#include <optional>

#include <strata/ops/optim.h>

#include "error_catalogue.h"

using namespace strata;
using strata::testing::Expect;
using strata::testing::Inputs;
using strata::testing::Row;
using strata::testing::counting;
using strata::testing::run_catalogue;

namespace {

constexpr int64_t kHuge = std::numeric_limits<int64_t>::max();

Tensor leaf(IntArrayRef sizes) { return counting(sizes, kFloat32).requires_grad_(); }
Tensor meta(IntArrayRef sizes) { return empty(sizes, TensorOptions().device(kMeta)); }
Tensor image(int64_t channels = 2, int64_t size = 5) { return counting({1, channels, size, size}); }

const Row tensor_rows[] = {
    {"tensor() with fewer values than the shape holds", Expect::Value, "tensor", "3",
     [](Inputs&) { (void)tensor(std::vector<float>{1, 2, 3}, {2, 2}); }},
    {"a negative size", Expect::Value, "zeros", "negative", [](Inputs&) { (void)zeros({2, -1}); }},
    {"item() of a tensor of many elements", Expect::Value, "item", "2 elements",
     [](Inputs& in) { (void)in.watch(counting({2})).item<float>(); }},
    {"item() of an empty tensor", Expect::Value, "item", "0 elements",
     [](Inputs& in) { (void)in.watch(counting({0})).item<float>(); }},
    {"item<int64_t>() of NaN", Expect::Value, "item", "nan cannot be converted to type Int64",
     [](Inputs& in) { (void)in.watch(full({}, std::nan(""))).item<int64_t>(); }},
    {"item<int8_t>() of 300", Expect::Value, "item", "300 cannot be converted to type Int8",
     [](Inputs& in) { (void)in.watch(full({}, 300, kInt64)).item<int8_t>(); }},
    {"item<int32_t>() of 1e10", Expect::Value, "item", "cannot be converted to type Int32",
     [](Inputs& in) { (void)in.watch(full({1}, 1e10, kFloat64)).item<int32_t>(); }},
    {"data_ptr<T>() with the wrong T", Expect::Type, "data_ptr", "Float",
     [](Inputs& in) { (void)in.watch(counting({2})).data_ptr<double>(); }},
    {"size() of a dim out of range", Expect::Index, "size", "out of range",
     [](Inputs& in) { (void)in.watch(counting({2, 3})).size(2); }},
    {"stride() of a dim out of range", Expect::Index, "stride", "out of range",
     [](Inputs& in) { (void)in.watch(counting({2, 3})).stride(-3); }},
    {"an undefined tensor's sizes", Expect::Error, "Tensor", "undefined", [](Inputs&) { (void)Tensor().sizes(); }},
    {"a device string that names no device", Expect::Value, "Device", "gpu", [](Inputs&) { (void)Device("gpu"); }},
    {"a device index that is not a number", Expect::Value, "Device", "cuda:x", [](Inputs&) { (void)Device("cuda:x"); }},
    {"mixing CPU and Meta tensors", Expect::Error, "add", "device",
     [](Inputs& in) { (void)add(in.watch(counting({2})), in.watch(meta({2}))); }},
    {"view() to a different element count", Expect::Value, "view", "6",
     [](Inputs& in) { (void)in.watch(counting({2, 3})).view({5}); }},
    {"view() of a transposed tensor across its strides", Expect::Error, "view", "reshape",
     [](Inputs& in) { (void)in.watch(counting({2, 3}).t()).view({6}); }},
    {"reshape() with two -1 dims", Expect::Value, "reshape", "-1",
     [](Inputs& in) { (void)in.watch(counting({2, 3})).reshape({-1, -1}); }},
    {"reshape() with an inferred dim that does not divide", Expect::Value, "reshape", "6",
     [](Inputs& in) { (void)in.watch(counting({2, 3})).reshape({4, -1}); }},
    {"expand() to a smaller size", Expect::Value, "expand", "3",
     [](Inputs& in) { (void)in.watch(counting({2, 3})).expand({2, 2}); }},
    {"permute() with a repeated dim", Expect::Value, "permute", "more than once",
     [](Inputs& in) { (void)in.watch(counting({2, 3})).permute({0, 0}); }},
    {"transpose() of a dim out of range", Expect::Index, "transpose", "out of range",
     [](Inputs& in) { (void)in.watch(counting({2, 3})).transpose(0, 5); }},
    {"copy_() from a shape that does not broadcast", Expect::Value, "copy_", "broadcast",
     [](Inputs& in) { in.watch(counting({2, 3})).copy_(in.watch(counting({4}))); }},
    {"requires_grad_() on an integer tensor", Expect::Type, "requires_grad_", "floating",
     [](Inputs& in) { in.watch(counting({2}, kInt64)).requires_grad_(); }},
    {"requires_grad_(false) on a non-leaf", Expect::Error, "requires_grad_", "non-leaf",
     [](Inputs& in) {
       Tensor x = in.watch(leaf({2}));
       (x * 2).requires_grad_(false);
     }},
    {"in-place op on a view of a leaf that requires grad", Expect::Error, "mul_", "view",
     [](Inputs& in) {
       Tensor x = in.watch(leaf({3}));
       x.select(0, 1).mul_(2);
     }},
    {"set_grad() of the wrong shape", Expect::Value, "set_grad", "shape",
     [](Inputs& in) { in.watch(leaf({2})).set_grad(zeros({3})); }},
    {"retain_grad() on a tensor that does not require grad", Expect::Error, "retain_grad", "does not require grad",
     [](Inputs& in) { in.watch(counting({2})).retain_grad(); }},
    {"register_hook() on a tensor that does not require grad", Expect::Error, "register_hook", "does not require grad",
     [](Inputs& in) { in.watch(counting({2})).register_hook([](const Tensor& g) { return g; }); }},
    {"remove_hook() of an unknown handle", Expect::Value, "remove_hook", "no hook",
     [](Inputs& in) { in.watch(leaf({2})).remove_hook(12345); }},
    {"arange() with a zero step", Expect::Value, "arange", "step", [](Inputs&) { (void)arange(0, 10, 0); }},
    {"arange() stepping away from its end", Expect::Value, "arange", "step", [](Inputs&) { (void)arange(0, 10, -1); }},
    {"linspace() with negative steps", Expect::Value, "linspace", "steps", [](Inputs&) { (void)linspace(0, 1, -2); }},
    {"randint() with low >= high", Expect::Value, "randint", "high", [](Inputs&) { (void)randint(5, 5, {2}); }},
    {"eye() of a negative size", Expect::Value, "eye", "negative", [](Inputs&) { (void)eye(-1); }},
    {"eye() with a negative column count", Expect::Value, "eye", "negative", [](Inputs&) { (void)eye(2, -3); }},
    {"eye() of more bytes than int64 counts", Expect::Value, "eye", "int64", [](Inputs&) { (void)eye(kHuge); }},
    {"linspace() of more bytes than int64 counts", Expect::Value, "linspace", "int64",
     [](Inputs&) { (void)linspace(0, 1, kHuge); }},
    {"expand() to more elements than int64 counts", Expect::Value, "expand", "int64",
     [](Inputs& in) { (void)in.watch(counting({2, 3})).expand({kHuge, 2, 3}); }},
    {"empty() of more elements than int64 counts", Expect::Value, "empty", "int64",
     [](Inputs&) { (void)empty({kHuge, kHuge}); }},
    {"arange() of more elements than int64 counts", Expect::Value, "arange", "too many elements",
     [](Inputs&) { (void)arange(0.0, 1e30, 1e-10); }},
    {"full() with a value the dtype cannot hold", Expect::Value, "full", "overflow",
     [](Inputs&) { (void)full({2}, 300, kUInt8); }},
    {"fill_() with a value the dtype cannot hold", Expect::Value, "fill_", "overflow",
     [](Inputs& in) { in.watch(zeros({2}, kUInt8)).fill_(300); }},
    {"reshape() of an empty tensor with an inferred dim", Expect::Value, "reshape", "-1",
     [](Inputs& in) { (void)in.watch(counting({0})).reshape({0, -1}); }},
    {"expand() to a negative size", Expect::Value, "expand", "-2",
     [](Inputs& in) { (void)in.watch(counting({1, 3})).expand({-2, 3}); }},
    {"copy_() from a Meta tensor", Expect::Error, "copy_", "meta tensor",
     [](Inputs& in) { in.watch(counting({2})).copy_(in.watch(meta({2}))); }},
};

const Row pointwise_rows[] = {
    {"add() of shapes that do not broadcast", Expect::Value, "add", "broadcast",
     [](Inputs& in) { (void)add(in.watch(counting({2, 3})), in.watch(counting({4}))); }},
    {"add_() whose result would broadcast to a bigger shape", Expect::Value, "add_", "shape",
     [](Inputs& in) { in.watch(counting({3})).add_(in.watch(counting({2, 3}))); }},
    {"add_() promoting an int64 tensor to float", Expect::Type, "add_", "Float",
     [](Inputs& in) { in.watch(counting({3}, kInt64)).add_(in.watch(counting({3}))); }},
    {"mul_() promoting a bool tensor to int64", Expect::Type, "mul_", "Bool",
     [](Inputs& in) { in.watch(ones({3}, kBool)).mul_(in.watch(counting({3}, kInt64))); }},
    {"div_() of integers (true division gives floats)", Expect::Type, "div_", "Int64",
     [](Inputs& in) { in.watch(counting({3}, kInt64)).div_(in.watch(counting({3}, kInt64))); }},
    {"add() of integers with a floating alpha", Expect::Type, "add", "alpha",
     [](Inputs& in) { (void)add(in.watch(counting({3}, kInt64)), in.watch(counting({3}, kInt64)), 0.5); }},
    {"add() of floats with a bool alpha", Expect::Type, "add", "bool alpha",
     [](Inputs& in) { (void)add(in.watch(counting({3})), in.watch(counting({3})), true); }},
    {"sub() of two bool tensors", Expect::Type, "sub", "bool",
     [](Inputs& in) { (void)sub(in.watch(ones({2}, kBool)), in.watch(ones({2}, kBool))); }},
    {"neg() of a bool tensor", Expect::Type, "neg", "Boolean", [](Inputs& in) { (void)neg(in.watch(ones({2}, kBool))); }},
    {"add_() on a leaf that requires grad", Expect::Error, "add_", "leaf",
     [](Inputs& in) { in.watch(leaf({3})).add_(1.0); }},
    {"relu_() on a leaf that requires grad", Expect::Error, "relu_", "leaf",
     [](Inputs& in) { in.watch(leaf({3})).relu_(); }},
    {"zero_() on a leaf that requires grad", Expect::Error, "zero_", "leaf",
     [](Inputs& in) { in.watch(leaf({3})).zero_(); }},
    {"gelu() of an integer tensor", Expect::Type, "gelu", "Int64",
     [](Inputs& in) { (void)gelu(in.watch(counting({3}, kInt64))); }},
    {"gelu() with an unknown approximation", Expect::Value, "gelu", "approximate",
     [](Inputs& in) { (void)gelu(in.watch(counting({3})), "fast"); }},
    {"silu() of a bool tensor", Expect::Type, "silu", "Bool", [](Inputs& in) { (void)silu(in.watch(ones({3}, kBool))); }},
    {"clamp() with neither bound", Expect::Value, "clamp", "min", [](Inputs& in) { (void)clamp(in.watch(counting({3}))); }},
    {"clamp_() of an int64 tensor to float bounds", Expect::Type, "clamp_", "Float",
     [](Inputs& in) { in.watch(counting({3}, kInt64)).clamp_(0.5, 1.5); }},
    {"pow() of integers to a negative integer power", Expect::Value, "pow", "negative",
     [](Inputs& in) { (void)pow(in.watch(counting({3}, kInt64)), -1); }},
    {"maximum() of shapes that do not broadcast", Expect::Value, "maximum", "broadcast",
     [](Inputs& in) { (void)maximum(in.watch(counting({2})), in.watch(counting({3}))); }},
    {"where() with a float condition", Expect::Type, "where", "Bool",
     [](Inputs& in) { (void)where(in.watch(counting({3})), in.watch(counting({3})), in.watch(counting({3}))); }},
    {"where() of shapes that do not broadcast", Expect::Value, "where", "broadcast",
     [](Inputs& in) { (void)where(in.watch(ones({3}, kBool)), in.watch(counting({2})), in.watch(counting({3}))); }},
    {"eq() of shapes that do not broadcast", Expect::Value, "eq", "broadcast",
     [](Inputs& in) { (void)eq(in.watch(counting({2})), in.watch(counting({3}))); }},
    {"add() of a uint8 tensor and a scalar it cannot hold", Expect::Value, "add", "overflow",
     [](Inputs& in) { (void)add(in.watch(zeros({2}, kUInt8)), 300); }},
    {"clamp_() on a leaf that requires grad", Expect::Error, "clamp_", "leaf",
     [](Inputs& in) { in.watch(leaf({3})).clamp_(0.0, 1.0); }},
    {"pow() of shapes that do not broadcast", Expect::Value, "pow", "broadcast",
     [](Inputs& in) { (void)pow(in.watch(counting({2})), in.watch(counting({3}))); }},
    {"add_() into an expanded tensor (overlapping memory)", Expect::Error, "add_", "more than one element",
     [](Inputs& in) { in.watch(counting({1, 3}).expand({2, 3})).add_(in.watch(counting({2, 3}))); }},
};

const Row reduce_rows[] = {
    {"sum() over a dim out of range", Expect::Index, "sum", "out of range",
     [](Inputs& in) { (void)in.watch(counting({2, 3})).sum(IntArrayRef{2}); }},
    {"sum() over a repeated dim", Expect::Value, "sum", "multiple times",
     [](Inputs& in) { (void)in.watch(counting({2, 3})).sum(IntArrayRef{1, -1}); }},
    {"mean() of an integer tensor", Expect::Type, "mean", "Int64",
     [](Inputs& in) { (void)mean(in.watch(counting({3}, kInt64))); }},
    {"max() of an empty tensor", Expect::Index, "max", "zero-size", [](Inputs& in) { (void)max(in.watch(counting({0}))); }},
    {"max(dim) over a dim out of range", Expect::Index, "max", "out of range",
     [](Inputs& in) { (void)max(in.watch(counting({2, 3})), 3); }},
    {"min(dim) over an empty dim", Expect::Index, "min", "zero-size",
     [](Inputs& in) { (void)min(in.watch(counting({2, 0})), 1); }},
    {"argmax() of an empty tensor", Expect::Index, "argmax", "zero-size",
     [](Inputs& in) { (void)argmax(in.watch(counting({0}))); }},
    {"var() of an integer tensor", Expect::Type, "var", "Int64",
     [](Inputs& in) { (void)var(in.watch(counting({3}, kInt64))); }},
    {"std() over a dim out of range", Expect::Index, "std", "out of range",
     [](Inputs& in) { (void)strata::std(in.watch(counting({2, 3})), {4}); }},
    {"prod(dim) over a dim out of range", Expect::Index, "prod", "out of range",
     [](Inputs& in) { (void)prod(in.watch(counting({2, 3})), -3); }},
    {"logsumexp() over a dim out of range", Expect::Index, "logsumexp", "out of range",
     [](Inputs& in) { (void)logsumexp(in.watch(counting({2, 3})), {2}); }},
    {"norm() of an integer tensor", Expect::Type, "norm", "Int64",
     [](Inputs& in) { (void)norm(in.watch(counting({3}, kInt64))); }},
    {"mean() into an integer dtype", Expect::Type, "mean", "Int64",
     [](Inputs& in) { (void)mean(in.watch(counting({3})), kInt64); }},
};

const Row linalg_rows[] = {
    {"matmul() of mismatched inner dims", Expect::Value, "matmul", "cannot be multiplied",
     [](Inputs& in) { (void)matmul(in.watch(counting({2, 3})), in.watch(counting({4, 5}))); }},
    {"matmul() of a 0-d tensor", Expect::Value, "matmul", "0-d",
     [](Inputs& in) { (void)matmul(in.watch(counting({})), in.watch(counting({2}))); }},
    {"matmul() of different dtypes", Expect::Type, "matmul", "Float64",
     [](Inputs& in) { (void)matmul(in.watch(counting({2, 2})), in.watch(counting({2, 2}, kFloat64))); }},
    {"mm() of a 3-d tensor", Expect::Value, "mm", "2-d",
     [](Inputs& in) { (void)mm(in.watch(counting({1, 2, 2})), in.watch(counting({2, 2}))); }},
    {"bmm() of different batch sizes", Expect::Value, "bmm", "batch",
     [](Inputs& in) { (void)bmm(in.watch(counting({2, 2, 3})), in.watch(counting({3, 3, 2}))); }},
    {"linear() with a weight of the wrong in_features", Expect::Value, "linear", "in_features",
     [](Inputs& in) { (void)linear(in.watch(counting({2, 3})), in.watch(counting({4, 5}))); }},
    {"linear() with a bias of the wrong size", Expect::Value, "linear", "bias",
     [](Inputs& in) { (void)linear(in.watch(counting({2, 3})), in.watch(counting({4, 3})), in.watch(counting({3}))); }},
    {"matmul() of vectors of different lengths", Expect::Value, "matmul", "cannot be multiplied",
     [](Inputs& in) { (void)matmul(in.watch(counting({3})), in.watch(counting({4}))); }},
    {"bmm() of a 2-d tensor", Expect::Value, "bmm", "3-d",
     [](Inputs& in) { (void)bmm(in.watch(counting({2, 2})), in.watch(counting({1, 2, 2}))); }},
    {"t() of a 3-d tensor", Expect::Value, "t", "3", [](Inputs& in) { (void)in.watch(counting({1, 2, 3})).t(); }},
};

const Row shape_rows[] = {
    {"flatten() with start_dim after end_dim", Expect::Value, "flatten", "start_dim",
     [](Inputs& in) { (void)in.watch(counting({2, 3, 4})).flatten(2, 1); }},
    {"squeeze() of a dim out of range", Expect::Index, "squeeze", "out of range",
     [](Inputs& in) { (void)in.watch(counting({2, 3})).squeeze(2); }},
    {"unsqueeze() at a dim out of range", Expect::Index, "unsqueeze", "out of range",
     [](Inputs& in) { (void)in.watch(counting({2, 3})).unsqueeze(4); }},
    {"split() into pieces of size 0", Expect::Value, "split", "split_size",
     [](Inputs& in) { (void)in.watch(counting({4})).split(0); }},
    {"split_with_sizes() that do not add up", Expect::Value, "split_with_sizes", "sum",
     [](Inputs& in) { (void)in.watch(counting({4})).split_with_sizes({1, 2}); }},
    {"chunk() into 0 chunks", Expect::Value, "chunk", "chunks", [](Inputs& in) { (void)in.watch(counting({4})).chunk(0); }},
    {"cat() of no tensors", Expect::Value, "cat", "empty", [](Inputs&) { (void)cat({}); }},
    {"cat() of mismatched sizes off the cat dim", Expect::Value, "cat", "size",
     [](Inputs& in) { (void)cat({in.watch(counting({2, 3})), in.watch(counting({2, 4}))}); }},
    {"cat() of different ranks", Expect::Value, "cat", "number of dimensions",
     [](Inputs& in) { (void)cat({in.watch(counting({2, 3})), in.watch(counting({2, 3, 1}))}); }},
    {"stack() of different shapes", Expect::Value, "stack", "equal size",
     [](Inputs& in) { (void)stack({in.watch(counting({2})), in.watch(counting({3}))}); }},
    {"stack() at a dim out of range", Expect::Index, "stack", "out of range",
     [](Inputs& in) { (void)stack({in.watch(counting({2})), in.watch(counting({2}))}, 3); }},
};

const Row index_rows[] = {
    {"select() of an index out of range", Expect::Index, "select", "out of range",
     [](Inputs& in) { (void)in.watch(counting({2, 3})).select(1, 3); }},
    {"narrow() past the end", Expect::Value, "narrow", "3",
     [](Inputs& in) { (void)in.watch(counting({2, 3})).narrow(1, 2, 2); }},
    {"slice() with a zero step", Expect::Value, "slice", "step",
     [](Inputs& in) { (void)in.watch(counting({4})).slice(0, 0, 4, 0); }},
    {"slice() with a negative step", Expect::Value, "slice", "step",
     [](Inputs& in) { (void)in.watch(counting({4})).slice(0, 0, 4, -1); }},
    {"select() of a 0-d tensor", Expect::Index, "select", "0-d",
     [](Inputs& in) { (void)in.watch(counting({})).select(0, 0); }},
    {"index_add() of an index out of range", Expect::Index, "index_add", "out of bounds",
     [](Inputs& in) {
       (void)in.watch(counting({2, 3})).index_add(0, in.watch(tensor({int64_t{5}})), in.watch(counting({1, 3})));
     }},
    {"index_select() of an index out of range", Expect::Index, "index_select", "out of bounds",
     [](Inputs& in) { (void)in.watch(counting({2, 3})).index_select(0, in.watch(tensor({int64_t{2}}))); }},
    {"index_select() with a float index", Expect::Type, "index_select", "Float",
     [](Inputs& in) { (void)in.watch(counting({2, 3})).index_select(0, in.watch(tensor({0.0f}))); }},
    {"index_select() with a 2-d index", Expect::Value, "index_select", "1-d",
     [](Inputs& in) { (void)in.watch(counting({2, 3})).index_select(0, in.watch(counting({1, 1}, kInt64))); }},
    {"gather() of an index out of range", Expect::Index, "gather", "out of bounds",
     [](Inputs& in) { (void)in.watch(counting({2, 3})).gather(1, in.watch(full({2, 1}, 7, kInt64))); }},
    {"gather() with an index of another rank", Expect::Value, "gather", "number of dimensions",
     [](Inputs& in) { (void)in.watch(counting({2, 3})).gather(1, in.watch(zeros({2}, kInt64))); }},
    {"scatter_add() of an index out of range", Expect::Index, "scatter_add", "out of bounds",
     [](Inputs& in) {
       (void)in.watch(counting({2, 3})).scatter_add(1, in.watch(full({2, 1}, -9, kInt64)), in.watch(counting({2, 1})));
     }},
    {"index_add() with a source of the wrong shape", Expect::Value, "index_add", "source",
     [](Inputs& in) {
       (void)in.watch(counting({2, 3})).index_add(0, in.watch(tensor({int64_t{0}})), in.watch(counting({1, 4})));
     }},
    {"masked_fill() with a float mask", Expect::Type, "masked_fill", "bool mask",
     [](Inputs& in) { (void)in.watch(counting({3})).masked_fill(in.watch(counting({3})), 0.0); }},
    {"masked_fill() with a value that is not 0-d", Expect::Value, "masked_fill", "0-d",
     [](Inputs& in) { (void)in.watch(counting({3})).masked_fill(in.watch(ones({3}, kBool)), in.watch(counting({2}))); }},
    {"embedding() of an index out of range", Expect::Index, "embedding", "out of range",
     [](Inputs& in) { (void)embedding(in.watch(counting({4, 2})), in.watch(tensor({int64_t{4}}))); }},
    {"embedding() with float indices", Expect::Type, "embedding", "Float",
     [](Inputs& in) { (void)embedding(in.watch(counting({4, 2})), in.watch(tensor({1.0f}))); }},
};

const Row nn_rows[] = {
    {"softmax() over a dim out of range", Expect::Index, "softmax", "out of range",
     [](Inputs& in) { (void)in.watch(counting({2, 3})).softmax(2); }},
    {"log_softmax() of an integer tensor", Expect::Type, "log_softmax", "Int64",
     [](Inputs& in) { (void)in.watch(counting({2, 3}, kInt64)).log_softmax(1); }},
    {"dropout() with p > 1", Expect::Value, "dropout", "probability",
     [](Inputs& in) { (void)dropout(in.watch(counting({3})), 1.5, true); }},
    {"dropout() with p < 0", Expect::Value, "dropout", "probability",
     [](Inputs& in) { (void)dropout(in.watch(counting({3})), -0.5, false); }},
    {"softmax() into an integer dtype", Expect::Type, "softmax", "Int64",
     [](Inputs& in) { (void)in.watch(counting({2, 3})).softmax(1, kInt64); }},
    {"conv2d() with a 3-d weight", Expect::Value, "conv2d", "4-d weight",
     [](Inputs& in) { (void)conv2d(in.watch(image(2)), in.watch(counting({2, 3, 3}))); }},
    {"conv2d() with a zero dilation", Expect::Value, "conv2d", "dilation",
     [](Inputs& in) { (void)conv2d(in.watch(image(2)), in.watch(counting({1, 2, 3, 3})), {}, {1, 1}, {0, 0}, {0, 1}); }},
    {"conv2d() of a Meta input with a CPU weight", Expect::Error, "conv2d", "device",
     [](Inputs& in) { (void)conv2d(in.watch(meta({1, 2, 5, 5})), in.watch(counting({1, 2, 3, 3}))); }},
    {"max_pool2d() of a bool tensor", Expect::Type, "max_pool2d", "bool",
     [](Inputs& in) { (void)max_pool2d(in.watch(ones({1, 1, 4, 4}, kBool)), {2, 2}); }},
    {"max_pool2d() of a 2-d input", Expect::Value, "max_pool2d", "3-d",
     [](Inputs& in) { (void)max_pool2d(in.watch(counting({4, 4})), {2, 2}); }},
    {"max_pool2d() with a kernel larger than the input", Expect::Value, "max_pool2d", "too small",
     [](Inputs& in) { (void)max_pool2d(in.watch(image()), {7, 7}); }},
    {"layer_norm() over a shape the input does not end with", Expect::Value, "layer_norm", "normalized_shape",
     [](Inputs& in) { (void)layer_norm(in.watch(counting({2, 3})), {4}); }},
    {"layer_norm() with a weight of the wrong shape", Expect::Value, "layer_norm", "weight",
     [](Inputs& in) { (void)layer_norm(in.watch(counting({2, 3})), {3}, in.watch(counting({2}))); }},
    {"conv2d() of a 2-d input", Expect::Value, "conv2d", "3-d [C, H, W] or 4-d",
     [](Inputs& in) { (void)conv2d(in.watch(counting({5, 5})), in.watch(counting({1, 1, 3, 3}))); }},
    {"conv2d() with a weight for other channels", Expect::Value, "conv2d", "channels",
     [](Inputs& in) { (void)conv2d(in.watch(image(2)), in.watch(counting({1, 3, 3, 3}))); }},
    {"conv2d() with a zero stride", Expect::Value, "conv2d", "stride",
     [](Inputs& in) { (void)conv2d(in.watch(image(2)), in.watch(counting({1, 2, 3, 3})), {}, {0, 1}); }},
    {"conv2d() with negative padding", Expect::Value, "conv2d", "padding",
     [](Inputs& in) { (void)conv2d(in.watch(image(2)), in.watch(counting({1, 2, 3, 3})), {}, {1, 1}, {-1, 0}); }},
    {"conv2d() with groups that do not divide the channels", Expect::Value, "conv2d", "groups",
     [](Inputs& in) { (void)conv2d(in.watch(image(3)), in.watch(counting({2, 1, 3, 3})), {}, {1, 1}, {0, 0}, {1, 1}, 2); }},
    {"conv2d() with a kernel larger than the padded input", Expect::Value, "conv2d", "kernel",
     [](Inputs& in) { (void)conv2d(in.watch(image(2)), in.watch(counting({1, 2, 7, 7}))); }},
    {"conv2d() with a bias of the wrong size", Expect::Value, "conv2d", "bias",
     [](Inputs& in) { (void)conv2d(in.watch(image(2)), in.watch(counting({1, 2, 3, 3})), in.watch(counting({2}))); }},
    {"conv2d() of an integer input", Expect::Type, "conv2d", "Int64",
     [](Inputs& in) { (void)conv2d(in.watch(counting({1, 1, 3, 3}, kInt64)), in.watch(counting({1, 1, 3, 3}, kInt64))); }},
    {"conv2d() whose padding overflows the window arithmetic", Expect::Value, "conv2d", "overflow",
     [](Inputs& in) { (void)conv2d(in.watch(image(2)), in.watch(counting({1, 2, 3, 3})), {}, {1, 1}, {kHuge / 2, 0}); }},
    {"conv2d() whose dilation overflows the window arithmetic", Expect::Value, "conv2d", "overflow",
     [](Inputs& in) {
       (void)conv2d(in.watch(image(2)), in.watch(counting({1, 2, 3, 3})), {}, {1, 1}, {0, 0}, {kHuge, 1});
     }},
    {"conv2d() with a huge stride", Expect::Value, "conv2d", "overflow",
     [](Inputs& in) {
       (void)conv2d(in.watch(image(2)), in.watch(counting({1, 2, 3, 3})), {}, {kHuge, kHuge}, {kHuge / 2, 0});
     }},
    {"max_pool2d() with a zero kernel", Expect::Value, "max_pool2d", "kernel_size",
     [](Inputs& in) { (void)max_pool2d(in.watch(image()), {0, 2}); }},
    {"max_pool2d() with padding over half the kernel", Expect::Value, "max_pool2d", "pad",
     [](Inputs& in) { (void)max_pool2d(in.watch(image()), {2, 2}, {2, 2}, {2, 2}); }},
    {"max_pool2d() with a stride of three values", Expect::Value, "max_pool2d", "stride",
     [](Inputs& in) { (void)max_pool2d(in.watch(image()), {2, 2}, {1, 1, 1}); }},
    {"max_pool2d() with a huge kernel", Expect::Value, "max_pool2d", "overflow",
     [](Inputs& in) { (void)max_pool2d(in.watch(image()), {kHuge, kHuge}, {1, 1}, {kHuge / 2, 0}); }},
    {"max_pool2d() with a huge dilation", Expect::Value, "max_pool2d", "overflow",
     [](Inputs& in) { (void)max_pool2d(in.watch(image()), {2, 2}, {1, 1}, {0, 0}, {kHuge, 1}); }},
    {"max_pool2d() with a huge padding and kernel", Expect::Value, "max_pool2d", "overflow",
     [](Inputs& in) { (void)max_pool2d(in.watch(image()), {kHuge, 2}, {kHuge, 1}, {kHuge / 2, 0}, {1, 1}, true); }},
    {"conv2d() whose output would have more elements than int64 holds", Expect::Value, "conv2d", "too large",
     [](Inputs& in) { (void)conv2d(in.watch(image(2)), in.watch(counting({1, 2, 3, 3})), {}, {1, 1}, {kHuge / 4, kHuge / 4}); }},
};

const Row loss_rows[] = {
    {"cross_entropy() with a target class out of range", Expect::Index, "cross_entropy", "out of bounds",
     [](Inputs& in) { (void)cross_entropy(in.watch(counting({2, 3})), in.watch(tensor({int64_t{0}, int64_t{3}}))); }},
    {"cross_entropy() with a negative target that is not ignore_index", Expect::Index, "cross_entropy", "-1",
     [](Inputs& in) {
       (void)cross_entropy(in.watch(counting({2, 3})), in.watch(tensor({int64_t{0}, int64_t{-1}})), {},
                           Reduction::Mean, -100);
     }},
    {"cross_entropy() with a batch size mismatch", Expect::Value, "cross_entropy", "target of shape",
     [](Inputs& in) { (void)cross_entropy(in.watch(counting({2, 3})), in.watch(zeros({3}, kInt64))); }},
    {"cross_entropy() with a weight per class of the wrong size", Expect::Value, "cross_entropy", "weight",
     [](Inputs& in) {
       (void)cross_entropy(in.watch(counting({2, 3})), in.watch(zeros({2}, kInt64)), in.watch(ones({2})));
     }},
    {"cross_entropy() with label_smoothing out of [0, 1]", Expect::Value, "cross_entropy", "label_smoothing",
     [](Inputs& in) {
       (void)cross_entropy(in.watch(counting({2, 3})), in.watch(zeros({2}, kInt64)), {}, Reduction::Mean, -100, 1.5);
     }},
    {"cross_entropy() with probabilities of the wrong shape", Expect::Value, "cross_entropy", "shape",
     [](Inputs& in) { (void)cross_entropy(in.watch(counting({2, 3})), in.watch(ones({2, 4}))); }},
    {"cross_entropy() with probabilities and a weight of the wrong size", Expect::Value, "cross_entropy", "weight",
     [](Inputs& in) { (void)cross_entropy(in.watch(counting({2, 3})), in.watch(ones({2, 3})), in.watch(ones({2}))); }},
    {"cross_entropy() with an unknown reduction", Expect::Value, "cross_entropy", "reduction",
     [](Inputs& in) {
       (void)cross_entropy(in.watch(counting({2, 3})), in.watch(zeros({2}, kInt64)), {}, static_cast<Reduction>(7));
     }},
    {"nll_loss() with float class indices", Expect::Type, "nll_loss", "Float",
     [](Inputs& in) { (void)nll_loss(in.watch(counting({2, 3})), in.watch(zeros({2}))); }},
    {"nll_loss() with a target class out of range", Expect::Index, "nll_loss", "out of bounds",
     [](Inputs& in) { (void)nll_loss(in.watch(counting({2, 3})), in.watch(full({2}, 5, kInt64))); }},
    {"nll_loss() of a 0-d input", Expect::Value, "nll_loss", "0-d",
     [](Inputs& in) { (void)nll_loss(in.watch(counting({})), in.watch(zeros({}, kInt64))); }},
    {"mse_loss() of integer tensors", Expect::Type, "mse_loss", "floating",
     [](Inputs& in) { (void)mse_loss(in.watch(counting({3}, kInt64)), in.watch(counting({3}, kInt64))); }},
    {"binary_cross_entropy_with_logits() with a pos_weight that does not broadcast", Expect::Value,
     "binary_cross_entropy_with_logits", "pos_weight",
     [](Inputs& in) {
       (void)binary_cross_entropy_with_logits(in.watch(counting({2, 3})), in.watch(counting({2, 3})), {},
                                              in.watch(counting({2})));
     }},
    {"mse_loss() of shapes that do not broadcast", Expect::Value, "mse_loss", "broadcast",
     [](Inputs& in) { (void)mse_loss(in.watch(counting({2, 3})), in.watch(counting({4}))); }},
    {"binary_cross_entropy_with_logits() with a target of another shape", Expect::Value,
     "binary_cross_entropy_with_logits", "shape",
     [](Inputs& in) { (void)binary_cross_entropy_with_logits(in.watch(counting({2, 3})), in.watch(counting({3}))); }},
};

const Row optim_rows[] = {
    {"_fused_sgd_() with a grad of another shape", Expect::Value, "_fused_sgd_", "grad",
     [](Inputs& in) {
       _fused_sgd_(in.watch(counting({3})), in.watch(counting({4})), std::nullopt, 0.1, 0, 0, 0, false, false, true);
     }},
    {"_fused_sgd_() with momentum and no buffer", Expect::Value, "_fused_sgd_", "momentum_buffer",
     [](Inputs& in) {
       _fused_sgd_(in.watch(counting({3})), in.watch(counting({3})), std::nullopt, 0.1, 0.9, 0, 0, false, false, true);
     }},
    {"_fused_adam_() with an exp_avg_sq of another shape (nothing updated)", Expect::Value, "_fused_adam_",
     "exp_avg_sq",
     [](Inputs& in) {
       _fused_adam_(in.watch(counting({3})), in.watch(counting({3})), in.watch(zeros({3})), in.watch(zeros({2})),
                    std::nullopt, 1, 1e-3, 0.9, 0.999, 0, 1e-8, false, false, false);
     }},
    {"_fused_adam_() at step 0", Expect::Value, "_fused_adam_", "step",
     [](Inputs& in) {
       _fused_adam_(in.watch(counting({3})), in.watch(counting({3})), in.watch(zeros({3})), in.watch(zeros({3})),
                    std::nullopt, 0, 1e-3, 0.9, 0.999, 0, 1e-8, false, false, false);
     }},
    {"_fused_sgd_.list() with fewer grads than params", Expect::Value, "_fused_sgd_", "grads has 1 entries",
     [](Inputs& in) {
       _fused_sgd_(tensor_list{in.watch(counting({3})), in.watch(counting({2}))}, tensor_list{in.watch(counting({3}))},
                   tensor_list{}, 0.1, 0, 0, 0, false, false, true);
     }},
    {"_fused_adam_.list() with an exp_avg of another shape in entry 1 (nothing updated)", Expect::Value,
     "_fused_adam_", "exp_avgs[1] of shape [2] does not match params[1] of shape [3]",
     [](Inputs& in) {
       const tensor_list params = {in.watch(counting({3})), in.watch(counting({3}))};
       _fused_adam_(params, params, tensor_list{in.watch(zeros({3})), in.watch(zeros({2}))},
                    tensor_list{in.watch(zeros({3})), in.watch(zeros({3}))}, tensor_list{}, std::vector<int64_t>{1, 1},
                    1e-3, 0.9, 0.999, 0, 1e-8, false, false, false);
     }},
    {"_fused_sgd_() of an integer param", Expect::Type, "_fused_sgd_", "floating",
     [](Inputs& in) {
       _fused_sgd_(in.watch(counting({3}, kInt64)), in.watch(counting({3}, kInt64)), std::nullopt, 0.1, 0, 0, 0, false,
                   false, true);
     }},
};

}  // namespace

TEST_CASE("error catalogue: tensors") { run_catalogue("tensors", tensor_rows); }
TEST_CASE("error catalogue: pointwise ops") { run_catalogue("pointwise", pointwise_rows); }
TEST_CASE("error catalogue: reductions") { run_catalogue("reductions", reduce_rows); }
TEST_CASE("error catalogue: linear algebra") { run_catalogue("linalg", linalg_rows); }
TEST_CASE("error catalogue: shapes") { run_catalogue("shapes", shape_rows); }
TEST_CASE("error catalogue: indexing") { run_catalogue("indexing", index_rows); }
TEST_CASE("error catalogue: nn functions") { run_catalogue("nn", nn_rows); }
TEST_CASE("error catalogue: losses") { run_catalogue("losses", loss_rows); }
TEST_CASE("error catalogue: fused optimizer ops") { run_catalogue("optimizer ops", optim_rows); }
