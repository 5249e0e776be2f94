// The error catalogue, part 2: dispatch, autograd, I/O and loading. See error_catalogue.h for
// what a row asserts; part 1 (tensors and ops) is in test_error_catalogue.cpp.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "error_catalogue.h"

using namespace strata;
using strata::testing::Expect;
using strata::testing::Inputs;
using strata::testing::Row;
using strata::testing::counting;
using strata::testing::run_catalogue;

namespace {

Tensor leaf(IntArrayRef sizes) { return counting(sizes, kFloat64).requires_grad_(); }

// ---------------------------------------------------------------------------------------
// Dispatch. Each row uses its own namespace so that rows cannot see each other's ops.

Tensor identity_cpu(const Tensor& x, double) { return x; }

const Row dispatch_rows[] = {
    {"a schema with a missing ')'", Expect::Value, "bad", "column",
     [](Inputs&) { Library library("catalogue_a", Library::DEF); library.def("bad(Tensor x, float beta=1.0 -> Tensor"); }},
    {"a schema with an unknown argument type", Expect::Value, "bad", "Tensr",
     [](Inputs&) { Library library("catalogue_b", Library::DEF); library.def("bad(Tensr x) -> Tensor"); }},
    {"a schema default of the wrong type", Expect::Value, "bad", "default",
     [](Inputs&) { Library library("catalogue_c", Library::DEF); library.def("bad(Tensor x, float beta='x') -> Tensor"); }},
    {"a schema naming another namespace", Expect::Value, "other_ns::op", "namespace 'catalogue_d'",
     [](Inputs&) { Library library("catalogue_d", Library::DEF); library.def("other_ns::op(Tensor x) -> Tensor"); }},
    {"defining an operator twice", Expect::Value, "catalogue_e::op", "defined twice",
     [](Inputs&) {
       Library def("catalogue_e", Library::DEF);
       def.def("op(Tensor x) -> Tensor");
       Library library("catalogue_e", Library::FRAGMENT); library.def("op(Tensor x) -> Tensor");
     }},
    {"a second live DEF library for a namespace", Expect::Value, "catalogue_f", "defined twice",
     [](Inputs&) {
       Library def("catalogue_f", Library::DEF);
       Library again("catalogue_f", Library::DEF);
     }},
    {"redefining the built-in strata namespace", Expect::Value, "strata", "defined twice",
     [](Inputs&) { Library again("strata", Library::DEF); }},
    {"def() from an IMPL library", Expect::Value, "catalogue_g", "IMPL",
     [](Inputs&) { Library library("catalogue_g", Library::IMPL, DispatchKey::CPU); library.def("op(Tensor x) -> Tensor"); }},
    {"impl() of an undefined operator", Expect::Value, "catalogue_h::missing", "impl for CPU",
     [](Inputs&) { Library library("catalogue_h", Library::IMPL, DispatchKey::CPU); library.impl("missing", identity_cpu); }},
    {"impl() whose argument type does not match the schema", Expect::Type, "catalogue_i::op", "beta",
     [](Inputs&) {
       Library def("catalogue_i", Library::DEF);
       def.def("op(Tensor x, float beta) -> Tensor");
       Library library("catalogue_i", Library::IMPL, DispatchKey::CPU); library.impl("op", [](const Tensor& x, float) { return x; });
     }},
    {"impl() with too few arguments", Expect::Type, "catalogue_j::op", "2 arguments",
     [](Inputs&) {
       Library def("catalogue_j", Library::DEF);
       def.def("op(Tensor x, float beta) -> Tensor");
       Library library("catalogue_j", Library::IMPL, DispatchKey::CPU); library.impl("op", [](const Tensor& x) { return x; });
     }},
    {"typed<Sig>() that does not match the schema", Expect::Type, "catalogue_k::op", "typed<Sig>()",
     [](Inputs&) {
       Library def("catalogue_k", Library::DEF);
       def.def("op(Tensor x, float beta) -> Tensor");
       (void)find_op("catalogue_k::op").typed<Tensor(const Tensor&)>();
     }},
    {"a call with no kernel for the tensor's key", Expect::NotImplemented, "catalogue_l::op", "Meta",
     [](Inputs& in) {
       Library def("catalogue_l", Library::DEF);
       def.def("op(Tensor x, float beta) -> Tensor");
       Library cpu("catalogue_l", Library::IMPL, DispatchKey::CPU);
       cpu.impl("op", identity_cpu);
       (void)call("catalogue_l::op", in.watch(empty({2}, TensorOptions().device(kMeta))), 1.0);
     }},
    {"a call of an op with no kernels at all", Expect::NotImplemented, "catalogue_m::op", "CPU",
     [](Inputs& in) {
       Library def("catalogue_m", Library::DEF);
       def.def("op(Tensor x) -> Tensor");
       (void)call("catalogue_m::op", in.watch(counting({2})));
     }},
    {"find_op() of an unknown operator", Expect::Value, "catalogue_none::op", "no operator",
     [](Inputs&) { (void)find_op("catalogue_none::op"); }},
    {"find_op() of a name with no namespace", Expect::Value, "relu", "::", [](Inputs&) { (void)find_op("relu"); }},
    {"a boxed call with too many arguments", Expect::Type, "strata::relu", "at most 1",
     [](Inputs& in) { (void)call("strata::relu", in.watch(counting({2})), 1.0); }},
    {"a boxed call missing an argument", Expect::Type, "strata::add.Tensor", "other",
     [](Inputs& in) { (void)call("strata::add.Tensor", in.watch(counting({2}))); }},
    {"a boxed call with an argument of the wrong kind", Expect::Type, "strata::relu", "Tensor",
     [](Inputs&) { (void)call("strata::relu", 1.0); }},
    {"IValue read as the wrong kind", Expect::Type, "IValue", "float", [](Inputs&) { (void)IValue(1.0).to_tensor(); }},
    {"dump_dispatch_table() of an unknown operator", Expect::Value, "catalogue_none::op", "no operator",
     [](Inputs&) { (void)dump_dispatch_table("catalogue_none::op"); }},
    {"a fallback from a library with no key", Expect::Value, "catalogue_n", "fallback",
     [](Inputs&) { Library library("catalogue_n", Library::FRAGMENT); library.fallback([](const OperatorHandle&, Stack&) {}); }},
    {"a schema with no return type", Expect::Value, "bad", "->",
     [](Inputs&) { Library library("catalogue_o", Library::DEF); library.def("bad(Tensor x)"); }},
    {"replacing a built-in kernel with the wrong signature (the built-in stays)", Expect::Type, "strata::relu",
     "argument",
     [](Inputs& in) {
       Tensor x = in.watch(counting({2}));
       try {
         Library library("strata", Library::IMPL, DispatchKey::CPU); library.impl("relu", [](const Tensor& t, double) { return t; });
       } catch (const Error&) {
         CHECK(relu(x).sizes() == x.sizes());
         throw;
       }
     }},
    {"an empty OperatorHandle", Expect::Value, "OperatorHandle", "empty",
     [](Inputs&) { (void)OperatorHandle().schema(); }},
    {"a boxed call_boxed() with too few values on the stack", Expect::Type, "strata::mul.Tensor", "other",
     [](Inputs& in) {
       Stack stack{IValue(in.watch(counting({2})))};
       find_op("strata::mul.Tensor").call_boxed(stack);
     }},
};

// ---------------------------------------------------------------------------------------
// Autograd.

struct WrongCount : autograd::Function<WrongCount> {
  static Tensor forward(autograd::AutogradContext*, const Tensor& x) { return x * 2.0; }
  static tensor_list backward(autograd::AutogradContext*, tensor_list grads) { return {grads[0], grads[0]}; }
};
struct WrongShape : autograd::Function<WrongShape> {
  static Tensor forward(autograd::AutogradContext*, const Tensor& x) { return x * 2.0; }
  static tensor_list backward(autograd::AutogradContext*, tensor_list) { return {ones({7}, kFloat64)}; }
};
struct DirtiesLeaf : autograd::Function<DirtiesLeaf> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x) {
    ctx->mark_dirty({x});
    return x;
  }
  static tensor_list backward(autograd::AutogradContext*, tensor_list grads) { return grads; }
};
struct ReadsMissingData : autograd::Function<ReadsMissingData> {
  static Tensor forward(autograd::AutogradContext*, const Tensor& x) { return x * 2.0; }
  static tensor_list backward(autograd::AutogradContext* ctx, tensor_list grads) {
    (void)ctx->saved_data.at("beta");
    return grads;
  }
};

const Row autograd_rows[] = {
    {"backward() of a non-scalar without a gradient", Expect::Error, "backward", "one-element",
     [](Inputs& in) { (in.watch(leaf({3})) * 2).backward(); }},
    {"backward() with a gradient of the wrong shape", Expect::Value, "backward", "shape",
     [](Inputs& in) { (in.watch(leaf({3})) * 2).backward(ones({2}, kFloat64)); }},
    {"backward() of a tensor that does not require grad", Expect::Error, "backward", "does not require grad",
     [](Inputs& in) { in.watch(counting({1})).sum().backward(); }},
    {"backward() twice without retain_graph", Expect::Error, "SumBackward", "second time",
     [](Inputs& in) {
       Tensor x = leaf({3});
       Tensor y = (x * x).sum();
       y.backward();
       in.watch(x);
       y.backward();
     }},
    {"backward() through a saved tensor modified in place", Expect::Error, "MulBackward", "version 1",
     [](Inputs& in) {
       Tensor x = leaf({3});
       Tensor h = x * 1.0;
       Tensor y = (h * h).sum();
       h.add_(1.0);
       in.watch(x);
       in.watch(h);
       y.backward();
     }},
    {"grad() of an input that does not require grad", Expect::Error, "grad", "does not require grad",
     [](Inputs& in) {
       Tensor x = in.watch(leaf({3}));
       Tensor c = in.watch(counting({3}, kFloat64));
       (void)autograd::grad({(x * c).sum()}, {c});
     }},
    {"grad() of an unused input without allow_unused", Expect::Error, "grad", "allow_unused",
     [](Inputs& in) {
       Tensor x = in.watch(leaf({3}));
       Tensor unused = in.watch(leaf({2}));
       (void)autograd::grad({(x * 2).sum()}, {x, unused});
     }},
    {"grad() with grad_outputs of the wrong count", Expect::Value, "grad", "2 gradients for 1 outputs",
     [](Inputs& in) {
       Tensor x = in.watch(leaf({3}));
       (void)autograd::grad({(x * 2).sum()}, {x}, {ones({}, kFloat64), ones({}, kFloat64)});
     }},
    {"a Function whose backward returns too many gradients", Expect::Value, "WrongCount", "2 gradients",
     [](Inputs& in) {
       Tensor x = in.watch(leaf({3}));
       WrongCount::apply(x).sum().backward();
     }},
    {"a Function whose backward returns a misshaped gradient", Expect::Value, "WrongShape", "shape",
     [](Inputs& in) {
       Tensor x = in.watch(leaf({3}));
       WrongShape::apply(x).sum().backward();
     }},
    {"a Function that dirties a leaf requiring grad", Expect::Error, "DirtiesLeaf", "leaf",
     [](Inputs& in) { (void)DirtiesLeaf::apply(in.watch(leaf({3}))); }},
    {"gradcheck() of a float32 input", Expect::Type, "gradcheck", "Float",
     [](Inputs& in) {
       Tensor x = in.watch(counting({3}).requires_grad_());
       (void)autograd::gradcheck([](const tensor_list& xs) { return tensor_list{xs[0] * 2}; }, {x});
     }},
    {"gradcheck() with no input requiring grad", Expect::Value, "gradcheck", "no input",
     [](Inputs& in) {
       Tensor x = in.watch(counting({3}, kFloat64));
       (void)autograd::gradcheck([](const tensor_list& xs) { return tensor_list{xs[0] * 2}; }, {x});
     }},
    {"a Function reading saved data it never saved", Expect::Value, "saved_data", "beta",
     [](Inputs& in) {
       Tensor x = in.watch(leaf({3}));
       ReadsMissingData::apply(x).sum().backward();
     }},
    {"grad() with no inputs", Expect::Value, "grad", "at least one input",
     [](Inputs& in) {
       Tensor x = in.watch(leaf({3}));
       (void)autograd::grad({(x * 2).sum()}, {});
     }},
    {"grad() of an undefined output", Expect::Error, "grad", "element 0",
     [](Inputs& in) { (void)autograd::grad({Tensor()}, {in.watch(leaf({3}))}); }},
    {"a hook that changes the gradient's shape", Expect::Error, "MulBackward", "a hook on output 0 changed its gradient",
     [](Inputs& in) {
       Tensor x = in.watch(leaf({3}));
       Tensor h = x * 2.0;
       h.register_hook([](const Tensor&) { return ones({5}, kFloat64); });
       h.sum().backward();
     }},
    {"anomaly mode naming the forward op of a NaN gradient", Expect::Error, "SqrtBackward", "sqrt",
     [](Inputs& in) {
       autograd::DetectAnomalyGuard anomaly;
       Tensor x = in.watch(zeros({1}, kFloat64).requires_grad_());
       (sqrt(x) * 0.0).sum().backward();
     }},
};

// ---------------------------------------------------------------------------------------
// I/O: files written by hand into a temporary directory.

using Bytes = std::vector<uint8_t>;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("strata_error_catalogue_" + name)).string();
}
void remove_temp_files() {
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::temp_directory_path()))
    if (entry.path().filename().string().starts_with("strata_error_catalogue_")) std::filesystem::remove(entry.path());
}
std::string write_temp(const std::string& name, const Bytes& bytes) {
  std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                              static_cast<std::streamsize>(bytes.size()));
  return path;
}
std::string write_temp(const std::string& name, std::string_view text) {
  return write_temp(name, Bytes(text.begin(), text.end()));
}

// A .npy version 1.0 file with the header dict `dict` (padded) and `data`.
Bytes npy_file(std::string dict, const Bytes& data) {
  size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::string head = std::string("\x93NUMPY\x01\x00", 8);
  head += static_cast<char>(dict.size() & 0xff);
  head += static_cast<char>(dict.size() >> 8);
  head += dict;
  Bytes bytes(head.size() + data.size());
  std::memcpy(bytes.data(), head.data(), head.size());
  if (!data.empty()) std::memcpy(bytes.data() + head.size(), data.data(), data.size());
  return bytes;
}
// A safetensors file declaring a header of `declared` bytes, then `header` and `data`.
Bytes safetensors_file(std::string header, const Bytes& data, std::optional<uint64_t> declared = {}) {
  header.append((8 - header.size() % 8) % 8, ' ');
  uint64_t length = declared.value_or(header.size());
  Bytes bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<uint8_t>(length >> (8 * i)));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

// A small network and a checkpoint of it with one entry changed.
nn::Sequential small_net() { return nn::Sequential(nn::Linear(3, 2), nn::ReLU(), nn::Linear(2, 1)); }
std::string checkpoint_with(const std::string& name, const std::function<void(std::map<std::string, Tensor>&)>& edit) {
  std::map<std::string, Tensor> state = small_net()->state_dict();
  edit(state);
  std::string path = temp_path(name);
  save_safetensors(path, state);
  return path;
}
void watch_net(Inputs& in, const nn::Sequential& net) { in.watch_all(net->parameters()); }

// An SGD-with-momentum optimizer over `net` that has taken one step, so it has state.
std::shared_ptr<optim::SGD> stepped_sgd(const nn::Sequential& net) {
  auto sgd = std::make_shared<optim::SGD>(net->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  net->forward(ones({1, 3})).sum().backward();
  sgd->step();
  return sgd;
}
// The watch shares the optimizer, which must outlive the row's call.
void watch_optimizer(Inputs& in, const nn::Sequential& net, const std::shared_ptr<optim::SGD>& optimizer) {
  watch_net(in, net);
  in.watch_state("optimizer", [optimizer] { return optimizer->state_dict(); });
}

const Row io_rows[] = {
    {"load_npy() of a file that does not exist", Expect::Value, "load_npy", "No such file",
     [](Inputs&) { (void)load_npy(temp_path("missing.npy")); }},
    {"load_npy() of a file without the magic", Expect::Value, "load_npy", "magic",
     [](Inputs&) { (void)load_npy(write_temp("nomagic.npy", "this is not numpy data at all, just words")); }},
    {"load_npy() of a truncated header", Expect::Value, "load_npy", "header",
     [](Inputs&) {
       Bytes bytes = npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", {});
       bytes.resize(20);
       (void)load_npy(write_temp("truncated_header.npy", bytes));
     }},
    {"load_npy() with less data than the shape needs", Expect::Value, "load_npy", "bytes",
     [](Inputs&) {
       (void)load_npy(write_temp("short.npy", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }",
                                                       Bytes(8, 0))));
     }},
    {"load_npy() of an unsupported dtype", Expect::Value, "load_npy", "<c8",
     [](Inputs&) {
       (void)load_npy(write_temp("complex.npy", npy_file("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
                                                         Bytes(8, 0))));
     }},
    {"load_npy() of a negative dim", Expect::Value, "load_npy", "shape",
     [](Inputs&) {
       (void)load_npy(write_temp("negative.npy", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }",
                                                          Bytes(4, 0))));
     }},
    {"load_npy() of a shape whose size overflows", Expect::Value, "load_npy", "overflow",
     [](Inputs&) {
       (void)load_npy(write_temp("overflow.npy", npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': "
                                                          "(4294967296, 4294967296), }",
                                                          Bytes(8, 0))));
     }},
    {"load_npy() of a header that is not a dict", Expect::Value, "load_npy", "dict",
     [](Inputs&) { (void)load_npy(write_temp("notdict.npy", npy_file("[1, 2, 3]", {}))); }},
    {"load_npy() of a header without a shape", Expect::Value, "load_npy", "shape",
     [](Inputs&) {
       (void)load_npy(write_temp("noshape.npy", npy_file("{'descr': '<f4', 'fortran_order': False, }", Bytes(4, 0))));
     }},
    {"load_npy() of an unknown version", Expect::Value, "load_npy", "version",
     [](Inputs&) {
       Bytes bytes = npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", Bytes(4, 0));
       bytes[6] = 9;
       (void)load_npy(write_temp("version9.npy", bytes));
     }},
    {"save_npy() of bfloat16", Expect::Type, "save_npy", "BFloat16",
     [](Inputs& in) { save_npy(temp_path("bf16.npy"), in.watch(zeros({2}, kBFloat16))); }},
    {"save_npy() of a Meta tensor", Expect::Value, "save_npy", "Meta",
     [](Inputs& in) { save_npy(temp_path("meta.npy"), in.watch(empty({2}, TensorOptions().device(kMeta)))); }},
    {"save_npy() into a directory that does not exist", Expect::Value, "save_npy", "/nonexistent",
     [](Inputs& in) { save_npy("/nonexistent/dir/x.npy", in.watch(zeros({2}))); }},
    {"load_safetensors() of a file that does not exist", Expect::Value, "load_safetensors", "No such file",
     [](Inputs&) { (void)load_safetensors(temp_path("missing.safetensors")); }},
    {"load_safetensors() of a file shorter than its length field", Expect::Value, "load_safetensors", "too few",
     [](Inputs&) { (void)load_safetensors(write_temp("tiny.safetensors", "abc")); }},
    {"load_safetensors() declaring a header past the end", Expect::Value, "load_safetensors", "header",
     [](Inputs&) { (void)load_safetensors(write_temp("long_header.safetensors", safetensors_file("{}", {}, 4096))); }},
    {"load_safetensors() declaring a header too large to be real", Expect::Value, "load_safetensors", "runs past the end",
     [](Inputs&) {
       (void)load_safetensors(write_temp("huge_header.safetensors", safetensors_file("{}", {}, uint64_t{1} << 40)));
     }},
    {"load_safetensors() of a header that is not JSON", Expect::Value, "load_safetensors", "JSON",
     [](Inputs&) { (void)load_safetensors(write_temp("notjson.safetensors", safetensors_file("{\"a\": ", {}))); }},
    {"load_safetensors() of an unknown dtype", Expect::Value, "load_safetensors", "C64",
     [](Inputs&) {
       (void)load_safetensors(write_temp(
           "c64.safetensors",
           safetensors_file(R"({"t":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}})", Bytes(8, 0))));
     }},
    {"load_safetensors() with offsets past the data", Expect::Value, "load_safetensors", "data_offsets",
     [](Inputs&) {
       (void)load_safetensors(write_temp(
           "offsets.safetensors",
           safetensors_file(R"({"t":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", Bytes(8, 0))));
     }},
    {"load_safetensors() with offsets that disagree with the shape", Expect::Value, "load_safetensors", "shape",
     [](Inputs&) {
       (void)load_safetensors(write_temp(
           "mismatch.safetensors",
           safetensors_file(R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", Bytes(8, 0))));
     }},
    {"load_safetensors() of overlapping tensors", Expect::Value, "load_safetensors", "overlap",
     [](Inputs&) {
       (void)load_safetensors(write_temp(
           "overlap.safetensors",
           safetensors_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                            R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                            Bytes(8, 0))));
     }},
    {"load_safetensors() of a negative dim", Expect::Value, "load_safetensors", "shape",
     [](Inputs&) {
       (void)load_safetensors(write_temp(
           "negative.safetensors",
           safetensors_file(R"({"t":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", Bytes(8, 0))));
     }},
    {"load_safetensors() with metadata that is not strings", Expect::Value, "load_safetensors", "__metadata__",
     [](Inputs&) {
       (void)load_safetensors(write_temp("metadata.safetensors", safetensors_file(R"({"__metadata__":{"a":1}})", {})));
     }},
    {"save_safetensors() of a Meta tensor", Expect::Value, "save_safetensors", "Meta",
     [](Inputs& in) {
       save_safetensors(temp_path("meta.safetensors"), {{"t", in.watch(empty({2}, TensorOptions().device(kMeta)))}});
     }},
    {"save_safetensors() of an undefined tensor", Expect::Value, "save_safetensors", "undefined",
     [](Inputs&) { save_safetensors(temp_path("undefined.safetensors"), {{"t", Tensor()}}); }},
    {"nn::load() of a file that does not exist", Expect::Value, "load_safetensors", "No such file",
     [](Inputs& in) {
       auto net = small_net();
       watch_net(in, net);
       nn::load(net, temp_path("missing_checkpoint.safetensors"));
     }},
    {"nn::load() of a checkpoint missing a key", Expect::Value, "load_state_dict", "missing keys: 2.bias",
     [](Inputs& in) {
       std::string path = checkpoint_with("missing_key.safetensors", [](auto& state) { state.erase("2.bias"); });
       auto net = small_net();
       watch_net(in, net);
       nn::load(net, path);
     }},
    {"nn::load() of a checkpoint with an extra key", Expect::Value, "load_state_dict", "unexpected keys: 3.weight",
     [](Inputs& in) {
       std::string path = checkpoint_with("extra_key.safetensors", [](auto& state) { state["3.weight"] = ones({1}); });
       auto net = small_net();
       watch_net(in, net);
       nn::load(net, path);
     }},
    {"nn::load() of a checkpoint with a misshaped tensor", Expect::Value, "load_state_dict", "2.weight",
     [](Inputs& in) {
       std::string path = checkpoint_with("misshaped.safetensors", [](auto& state) { state["2.weight"] = ones({2, 1}); });
       auto net = small_net();
       watch_net(in, net);
       nn::load(net, path);
     }},
    {"load_state_dict() with a Meta tensor after good ones (all or nothing)", Expect::Error, "load_state_dict", "Meta",
     [](Inputs& in) {
       auto net = small_net();
       std::map<std::string, Tensor> state;
       for (const auto& [name, t] : net->state_dict()) state[name] = ones(t.sizes());
       state["2.weight"] = empty({1, 2}, TensorOptions().device(kMeta));
       watch_net(in, net);
       net->load_state_dict(state);
     }},
    {"optim::load() for a different number of parameters", Expect::Value, "load_state_dict", "parameter",
     [](Inputs& in) {
       auto other = nn::Sequential(nn::Linear(3, 2));
       auto other_sgd = stepped_sgd(other);
       std::string path = temp_path("optim_count.safetensors");
       optim::save(*other_sgd, path);
       auto net = small_net();
       auto sgd = stepped_sgd(net);
       watch_optimizer(in, net, sgd);
       optim::load(*sgd, path);
     }},
    {"optim::load() with misshaped state", Expect::Value, "load_state_dict", "shape",
     [](Inputs& in) {
       auto net = small_net();
       auto sgd = stepped_sgd(net);
       std::map<std::string, Tensor> state = sgd->state_dict();
       state["state.0.momentum_buffer"] = ones({5});
       std::string path = temp_path("optim_shape.safetensors");
       save_safetensors(path, state);
       watch_optimizer(in, net, sgd);
       optim::load(*sgd, path);
     }},
    {"optimizer load_state_dict() with a group option of many values (all or nothing)", Expect::Value,
     "load_state_dict", "lr",
     [](Inputs& in) {
       auto net = small_net();
       auto sgd = stepped_sgd(net);
       std::map<std::string, Tensor> state = sgd->state_dict();
       state["param_groups.0.dampening"] = full({}, 0.5, kFloat64);  // options load in name order
       state["param_groups.0.momentum"] = zeros({}, kFloat64);
       state["param_groups.0.lr"] = ones({2}, kFloat64);
       watch_optimizer(in, net, sgd);
       sgd->load_state_dict(state);
     }},
    {"optimizer load_state_dict() with Meta state (all or nothing)", Expect::Error, "load_state_dict", "Meta",
     [](Inputs& in) {
       auto net = small_net();
       auto sgd = stepped_sgd(net);
       std::map<std::string, Tensor> state = sgd->state_dict();
       state["state.3.momentum_buffer"] = empty({1}, TensorOptions().device(kMeta));
       watch_optimizer(in, net, sgd);
       sgd->load_state_dict(state);
     }},
    {"read_idx() of a file that does not exist", Expect::Value, "read_idx", "No such file",
     [](Inputs&) { (void)data::read_idx(temp_path("missing.idx")); }},
    {"read_idx() of a corrupt gzip stream", Expect::Value, "read_idx", "corrupt",
     [](Inputs&) { (void)data::read_idx(write_temp("corrupt.idx.gz", Bytes{0x1f, 0x8b, 8, 0, 1, 2, 3, 4, 5, 6})); }},
    {"read_idx() of a bad magic number", Expect::Value, "read_idx", "magic",
     [](Inputs&) { (void)data::read_idx(write_temp("badmagic.idx", Bytes{1, 2, 3, 4, 0, 0, 0, 1})); }},
    {"read_idx() with less data than the dims need", Expect::Value, "read_idx", "bytes",
     [](Inputs&) { (void)data::read_idx(write_temp("short.idx", Bytes{0, 0, 0x08, 1, 0, 0, 0, 9, 1, 2})); }},
    {"read_csv() of rows of different lengths", Expect::Value, "read_csv", "columns",
     [](Inputs&) { (void)data::read_csv(write_temp("ragged.csv", "1,2,3\n4,5\n")); }},
    {"read_csv() of a field that is not a number", Expect::Value, "read_csv", "abc",
     [](Inputs&) { (void)data::read_csv(write_temp("text.csv", "1,2\n3,abc\n")); }},
    {"read_csv() into an integer dtype", Expect::Type, "read_csv", "Float32 or Float64",
     [](Inputs&) { (void)data::read_csv(write_temp("ints.csv", "1,2\n"), kInt64); }},
    {"TensorDataset() of data and targets of different lengths", Expect::Value, "TensorDataset", "3",
     [](Inputs& in) { data::TensorDataset(in.watch(counting({3, 2})), in.watch(counting({2}))); }},
    {"TensorDataset::get() past the end", Expect::Index, "TensorDataset", "out of range",
     [](Inputs& in) { (void)data::TensorDataset(in.watch(counting({3, 2})), in.watch(counting({3}))).get(3); }},
    {"load_digits() of a CSV with the wrong number of columns", Expect::Value, "load_digits", "65",
     [](Inputs&) { (void)data::load_digits(write_temp("digits.csv", "1,2,3\n4,5,6\n")); }},
    {"load_mnist() of a directory that does not exist", Expect::Value, "load_mnist", "/nonexistent",
     [](Inputs&) { (void)data::load_mnist("/nonexistent/mnist", true); }},
    {"SGD() with a negative learning rate", Expect::Value, "SGD", "learning rate",
     [](Inputs& in) { optim::SGD(tensor_list{in.watch(leaf({2}))}, optim::SGDOptions(-1.0)); }},
    {"Adam() with beta1 >= 1", Expect::Value, "Adam", "beta1",
     [](Inputs& in) { optim::Adam(tensor_list{in.watch(leaf({2}))}, optim::AdamOptions(1e-3).betas({1.0, 0.999})); }},
    {"optim::load() of a module checkpoint", Expect::Value, "load_state_dict", "param_groups.0.params",
     [](Inputs& in) {
       auto net = small_net();
       std::string path = temp_path("module_as_optimizer.safetensors");
       nn::save(net, path);
       auto sgd = stepped_sgd(net);
       watch_optimizer(in, net, sgd);
       optim::load(*sgd, path);
     }},
    {"DataLoader() with a zero batch size", Expect::Value, "DataLoader", "batch_size",
     [](Inputs& in) { data::DataLoader(data::TensorDataset(in.watch(counting({3, 2})), in.watch(counting({3}))), 0); }},
};

// ---------------------------------------------------------------------------------------
// Loading libraries.

const Row loading_rows[] = {
    {"load_library() of a path that does not exist", Expect::Error, "load_library", "No such file",
     [](Inputs&) { (void)load_library("/nonexistent/libnothing.so"); }},
    {"load_library() of a text file", Expect::Error, "load_library", "cannot load",
     [](Inputs&) { (void)load_library(write_temp("not_a_library.so", "this is text, not an ELF file\n")); }},
    {"load_library() of a directory", Expect::Error, "load_library", "cannot load",
     [](Inputs&) { (void)load_library(std::filesystem::temp_directory_path().string()); }},
    {"load_library() of an empty path", Expect::Value, "load_library", "empty", [](Inputs&) { (void)load_library(""); }},
    {"load_library() of a library whose block fails", Expect::Value, "broken", "column",
     [](Inputs&) { (void)load_library(STRATA_TEST_BAD_PLUGIN_PATH); }},
};

}  // namespace

TEST_CASE("error catalogue: dispatch") { run_catalogue("dispatch", dispatch_rows); }
TEST_CASE("error catalogue: autograd") { run_catalogue("autograd", autograd_rows); }
TEST_CASE("error catalogue: I/O") {
  run_catalogue("I/O", io_rows);
  remove_temp_files();
}
TEST_CASE("error catalogue: loading") {
  run_catalogue("loading", loading_rows);
  remove_temp_files();
  CHECK_FALSE(has_op("bad_plugin_ops::fine"));
}
