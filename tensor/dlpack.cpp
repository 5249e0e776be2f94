// DLPack export and import. See Note [DLPack ownership].
#include <strata/tensor/dlpack.h>

#include <dlpack/dlpack.h>

#include <memory>
#include <vector>

namespace strata {

// Note [DLPack ownership]
// to_dlpack allocates one context holding a Tensor handle (which keeps the storage alive), the
// int64 shape and strides the DLTensor points at, and the DLManagedTensor itself; the deleter
// frees the context, releasing the tensor. from_dlpack wraps the producer's memory with
// detail::wrap_external, whose storage calls the producer's deleter once when it dies; until
// every check has passed nothing is taken, so a refused tensor stays the caller's.
namespace {

// DLPack 0.8 added kDLBool = 6; older headers (Debian's 0.6) lack it, so the value is spelled here.
constexpr uint8_t kDLBoolCode = 6;

DLDataType to_dl_dtype(ScalarType dtype) {
  DLDataType result{};
  result.lanes = 1;
  result.bits = static_cast<uint8_t>(element_size(dtype) * 8);
  switch (dtype) {
    case kBool: result.code = kDLBoolCode; break;
    case kUInt8: result.code = kDLUInt; break;
    case kInt8:
    case kInt16:
    case kInt32:
    case kInt64: result.code = kDLInt; break;
    case kFloat16:
    case kFloat32:
    case kFloat64: result.code = kDLFloat; break;
    case kBFloat16: result.code = kDLBfloat; break;
  }
  return result;
}

ScalarType from_dl_dtype(DLDataType dtype) {
  STRATA_CHECK_TYPE(dtype.lanes == 1, "[from_dlpack] vector dtypes (lanes = ", dtype.lanes, ") are not supported");
  const int bits = dtype.bits;
  switch (dtype.code) {
    case kDLBoolCode:
      if (bits == 8) return kBool;
      break;
    case kDLUInt:
      if (bits == 8) return kUInt8;
      break;
    case kDLInt:
      if (bits == 8) return kInt8;
      if (bits == 16) return kInt16;
      if (bits == 32) return kInt32;
      if (bits == 64) return kInt64;
      break;
    case kDLFloat:
      if (bits == 16) return kFloat16;
      if (bits == 32) return kFloat32;
      if (bits == 64) return kFloat64;
      break;
    case kDLBfloat:
      if (bits == 16) return kBFloat16;
      break;
    default: break;
  }
  detail::throw_error<TypeError>("[from_dlpack] unsupported DLPack dtype (code ", int(dtype.code), ", ", bits,
                                 " bits); supported: bool, uint8, int8, int16, int32, int64, float16, bfloat16, "
                                 "float32, float64");
}

DLDevice to_dl_device(Device device) {
  DLDevice result{};
  result.device_id = device.index();
  switch (device.type()) {
    case kCPU: result.device_type = kDLCPU; result.device_id = 0; break;
    case kCUDA: result.device_type = kDLCUDA; break;
    case kMeta: break;  // refused before this is reached
  }
  return result;
}

Device from_dl_device(DLDevice device) {
  switch (device.device_type) {
    case kDLCPU: return Device(kCPU);
    case kDLCUDA: return Device(kCUDA, device.device_id);
    default: break;
  }
  detail::throw_error<NotImplementedError>("[from_dlpack] DLPack device type ", int(device.device_type),
                                           " is not supported (strata takes CPU and CUDA tensors)");
}

struct ExportContext {
  Tensor tensor;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  DLManagedTensor managed{};
};

void delete_export_context(DLManagedTensor* managed) { delete static_cast<ExportContext*>(managed->manager_ctx); }

}  // namespace

DLManagedTensor* to_dlpack(const Tensor& tensor) {
  STRATA_CHECK_VALUE(tensor.defined(), "[to_dlpack] the tensor is undefined");
  STRATA_CHECK_VALUE(!tensor.is_meta(), "[to_dlpack] a Meta tensor has no data to share (shape ", tensor.sizes(), ", ",
                     tensor.dtype(), ")");
  auto context = std::make_unique<ExportContext>();
  // The same memory, without autograd history.
  context->tensor = detail::make_alias(tensor, tensor.sizes(), tensor.strides(), tensor.storage_offset());
  context->shape = tensor.sizes().vec();
  context->strides = tensor.strides().vec();
  DLTensor& dl = context->managed.dl_tensor;
  dl.data = tensor.impl()->data();
  dl.device = to_dl_device(tensor.device());
  dl.ndim = static_cast<int>(tensor.dim());
  dl.dtype = to_dl_dtype(tensor.dtype());
  dl.shape = context->shape.data();
  dl.strides = context->strides.data();
  dl.byte_offset = 0;
  context->managed.manager_ctx = context.get();
  context->managed.deleter = &delete_export_context;
  return &context.release()->managed;
}

Tensor from_dlpack(DLManagedTensor* managed) {
  STRATA_CHECK_VALUE(managed != nullptr, "[from_dlpack] got a null DLManagedTensor");
  const DLTensor& dl = managed->dl_tensor;
  const Device device = from_dl_device(dl.device);
  const ScalarType dtype = from_dl_dtype(dl.dtype);
  STRATA_CHECK_VALUE(dl.ndim >= 0 && (dl.ndim == 0 || dl.shape), "[from_dlpack] bad shape: ndim ", dl.ndim,
                     " with ", dl.shape ? "a" : "no", " shape array");
  std::vector<int64_t> sizes(dl.shape, dl.shape + dl.ndim);
  std::vector<int64_t> strides = dl.strides ? std::vector<int64_t>(dl.strides, dl.strides + dl.ndim)
                                            : contiguous_strides(sizes).ref().vec();  // null: compact row-major
  void* data = static_cast<char*>(dl.data) + dl.byte_offset;
  auto release = [managed](void*) {
    if (managed->deleter) managed->deleter(managed);
  };
  return detail::wrap_external(data, sizes, strides, dtype, device, release, "from_dlpack");
}

}  // namespace strata
