#pragma once
// Tensors to and from files: NumPy's .npy format and Hugging Face's safetensors format.
// Loaders validate every field and throw ValueError ("[load_npy] ..." or "[load_safetensors] ...",
// naming the file and the fault) for malformed input; they never read outside the given bytes.
// The *_bytes variants work on memory and take a `source` name for messages. Savers replace a
// file only once the new one is complete (detail::write_file_atomically in file_io.h).
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <strata/tensor/file_io.h>
#include <strata/tensor/tensor.h>

namespace strata {

// .npy: writes version 1.0 (little-endian, C order, data 64-byte aligned). Reads versions 1.0,
// 2.0 and 3.0, descrs b1 u1 i1 i2 i4 i8 f2 f4 f8 in either byte order, and Fortran order.
// BFloat16 has no NumPy dtype: save_npy throws TypeError for it (use safetensors).
void save_npy(const std::string& path, const Tensor& tensor);
Tensor load_npy(const std::string& path);
std::vector<uint8_t> save_npy_bytes(const Tensor& tensor);
Tensor load_npy_bytes(std::span<const uint8_t> bytes, std::string_view source = "<memory>");

// safetensors: tensors in sorted name order, little-endian, C order; header padded with spaces
// to 8 bytes. Dtypes BOOL U8 I8 I16 I32 I64 F16 BF16 F32 F64. Optional "__metadata__" string map.
using SafetensorsMetadata = std::map<std::string, std::string>;
void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const SafetensorsMetadata& metadata = {});
std::map<std::string, Tensor> load_safetensors(const std::string& path);
SafetensorsMetadata load_safetensors_metadata(const std::string& path);
std::vector<uint8_t> save_safetensors_bytes(const std::map<std::string, Tensor>& tensors,
                                            const SafetensorsMetadata& metadata = {});
// Fills *metadata (when given) with the file's "__metadata__".
std::map<std::string, Tensor> load_safetensors_bytes(std::span<const uint8_t> bytes,
                                                     std::string_view source = "<memory>",
                                                     SafetensorsMetadata* metadata = nullptr);

namespace detail {
// `tensor`'s values as a contiguous CPU tensor without autograd history: an alias when they
// already are, a copy otherwise. Throws NotImplementedError, naming `op`, off the CPU. See
// Note [Values without ops] in serialize.cpp.
Tensor contiguous_cpu(const Tensor& tensor, const char* op);
// numel * item_size for `shape`, or nullopt when that, or the product of the shape's nonzero
// dims (which contiguous strides reach), overflows int64.
std::optional<int64_t> checked_nbytes(std::span<const int64_t> shape, int64_t item_size);
// Reverses the byte order of each `element_size`-byte element in place.
void byteswap_elements(uint8_t* data, int64_t count, int64_t element_size);
}  // namespace detail

}  // namespace strata
