// Graph::save and jit::load: the text form plus the constant tensors' bytes, in one file.
#include <strata/jit/graph.h>

#include <fstream>
#include <sstream>

#include <strata/jit/ir_text.h>
#include <strata/ops/ops.h>

namespace strata::jit {

// Note [Graph files]
// A graph file is
//   strata-graph 1\n
//   text <bytes>\n<the graph's text form (Note [Graph text])>
//   tensors <count>\n
//   then per constant tensor: <dtype> <requires_grad 0|1> <device> [<sizes>] <bytes>\n<raw bytes>
// Raw bytes are the contiguous CPU copy in the machine's byte order (little-endian here, as
// safetensors); a constant on CUDA is loaded back onto CUDA. Operators are found by name at
// load, so a custom op's library must be loaded first. A graph holding a bare Function cannot
// be saved: the closure exists only in the tracing process.

void Graph::save(const std::string& path) const {
  for (const Node& node : nodes_) {
    STRATA_CHECK_VALUE(node.op != "prim::FusedChain", "[jit::Graph::save] the graph holds fused chains made by "
                       "jit::compile for this process; save the traced graph (jit::trace) instead");
    STRATA_CHECK_VALUE(!node.is_function(), "[jit::Graph::save] the graph calls the bare Function ",
                       node.function->name, ", which cannot be saved; make it an op (def a schema and impl "
                       "autograd::kernel<", node.function->name, ">() for Autograd) and call the op instead");
  }
  const std::string text = str();
  const tensor_list constants = detail::graph_constants(*this);
  std::ofstream out(path, std::ios::binary);
  STRATA_CHECK(out.good(), "[jit::Graph::save] cannot open '", path, "' for writing");
  out << "strata-graph 1\ntext " << text.size() << '\n' << text << "tensors " << constants.size() << '\n';
  for (size_t i = 0; i < constants.size(); ++i) {
    const Tensor& constant = constants[i];
    STRATA_CHECK_VALUE(!constant.device().is_meta(), "[jit::Graph::save] constant $", i,
                       " is a Meta tensor and has no data to save");
    const Tensor host = constant.detach().to(Device(kCPU)).contiguous();
    const size_t bytes = static_cast<size_t>(host.numel() * element_size(host.dtype()));
    out << scalar_type_name(host.dtype()) << ' ' << (constant.requires_grad() ? 1 : 0) << ' '
        << constant.device().str() << ' ' << host.sizes() << ' ' << bytes << '\n';
    out.write(static_cast<const char*>(host.data_ptr()), static_cast<std::streamsize>(bytes));
  }
  STRATA_CHECK(out.good(), "[jit::Graph::save] writing '", path, "' failed");
}

namespace {

Tensor read_constant(std::istream& in, size_t index, const std::string& path) {
  std::string dtype_name, device_name, sizes_text;
  int requires_grad = 0;
  size_t bytes = 0;
  in >> dtype_name >> requires_grad >> device_name;
  std::getline(in, sizes_text, ']');
  in >> bytes;
  in.get();  // the newline before the bytes
  STRATA_CHECK_VALUE(in.good(), "[jit::load] '", path, "': constant $", index, " has a malformed header");
  std::vector<int64_t> sizes;
  std::istringstream dims(sizes_text.substr(sizes_text.find('[') + 1));
  for (int64_t size; dims >> size;) {
    sizes.push_back(size);
    if (dims.peek() == ',') dims.get();
  }
  const std::optional<ScalarType> named = detail::dtype_named(dtype_name);
  STRATA_CHECK_VALUE(named.has_value(), "[jit::load] '", path, "': constant $", index, " has unknown dtype ", dtype_name);
  const ScalarType dtype = *named;
  Tensor tensor = empty(IntArrayRef(sizes), TensorOptions().dtype(dtype));
  const size_t expected = static_cast<size_t>(tensor.numel() * element_size(dtype));
  STRATA_CHECK_VALUE(bytes == expected, "[jit::load] '", path, "': constant $", index, " holds ", bytes,
                     " bytes, its shape needs ", expected);
  in.read(static_cast<char*>(tensor.data_ptr()), static_cast<std::streamsize>(bytes));
  STRATA_CHECK_VALUE(in.good() || (bytes == 0 && !in.bad()), "[jit::load] '", path, "': constant $", index,
                     " is cut short");
  const Device device(device_name);
  if (device != Device(kCPU)) tensor = tensor.to(device);
  if (requires_grad) tensor.requires_grad_(true);
  return tensor;
}

}  // namespace

Graph load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  STRATA_CHECK_VALUE(in.good(), "[jit::load] cannot open '", path, "'");
  std::string magic, word;
  int version = 0;
  size_t text_bytes = 0;
  in >> magic >> version >> word >> text_bytes;
  STRATA_CHECK_VALUE(in.good() && magic == "strata-graph" && word == "text", "[jit::load] '", path,
                     "' is not a strata graph file (Graph::save writes them)");
  STRATA_CHECK_VALUE(version == 1, "[jit::load] '", path, "' has format version ", version, "; this strata reads 1");
  in.get();
  std::string text(text_bytes, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text_bytes));
  size_t count = 0;
  in >> word >> count;
  STRATA_CHECK_VALUE(in.good() && word == "tensors", "[jit::load] '", path, "' is cut short or corrupt");
  tensor_list constants;
  for (size_t i = 0; i < count; ++i) constants.push_back(read_constant(in, i, path));
  return detail::parse_graph(text, constants, "jit::load");
}

Graph parse(const std::string& text, const tensor_list& constants) {
  return detail::parse_graph(text, constants, "jit::parse");
}

}  // namespace strata::jit
