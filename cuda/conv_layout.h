#pragma once
// Internal to cuda/: the index arithmetic of conv2d's im2col and col2im kernels (cuda/conv.cu),
// host and device, so the host tests check what the kernels compute. No CUDA header needed.
#include <algorithm>
#include <cstdint>

#include <strata/cuda/indexing.h>

namespace strata::cuda::detail {

// Note [CUDA im2col layout]
// im2col writes, for each sample n of a chunk, a matrix of rows (c, i, j) (input channel c of
// all `channels`, kernel tap (i, j); row (c * kernel_h + i) * kernel_w + j) by columns
// position = oh * out_w + ow, entry x[c][oh * stride_h - pad_h + i * dilation_h]
// [ow * stride_w - pad_w + j * dilation_w] (0 in the padding): ops/conv.cpp's layout. The entry
// (n, row, position) lives at row * row_stride + n * sample_stride + position, so one kernel
// writes either layout conv.cu uses: per sample ([n][row][position], for the forward GEMM
// batched over samples) or wide ([row][n][position], so that the backward GEMMs sum over the
// samples of a chunk inside one product). A group's rows are one contiguous block of
// patch = channels / groups * kernel_h * kernel_w rows.
struct ColumnsGeometry {
  int64_t channels = 0, height = 0, width = 0;
  int64_t kernel_h = 1, kernel_w = 1, out_h = 0, out_w = 0;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  int64_t row_stride = 0, sample_stride = 0;

  STRATA_HOST_DEVICE int64_t rows() const { return channels * kernel_h * kernel_w; }
  STRATA_HOST_DEVICE int64_t positions() const { return out_h * out_w; }
  STRATA_HOST_DEVICE int64_t column_offset(int64_t sample, int64_t row, int64_t position) const {
    return row * row_stride + sample * sample_stride + position;
  }
};

// The offset in one sample's [channels, height, width] input that im2col reads for (row,
// position), or -1 where the window lies in the padding.
STRATA_HOST_DEVICE inline int64_t im2col_source(const ColumnsGeometry& g, int64_t row, int64_t position) {
  const int64_t j = row % g.kernel_w, i = row / g.kernel_w % g.kernel_h, c = row / (g.kernel_w * g.kernel_h);
  const int64_t oh = position / g.out_w, ow = position % g.out_w;
  const int64_t h = oh * g.stride_h - g.pad_h + i * g.dilation_h;
  const int64_t w = ow * g.stride_w - g.pad_w + j * g.dilation_w;
  if (h < 0 || h >= g.height || w < 0 || w >= g.width) return -1;
  return (c * g.height + h) * g.width + w;
}

// Calls fn(row, position) for every column entry that im2col fills from input element
// (c, h, w): the entries col2im adds back into it, in increasing (i, j), the order in which
// the CPU's col2im adds them. Tap i reads h from output row oh = (h + pad_h - i * dilation_h)
// / stride_h when that divides exactly and lands in [0, out_h); likewise for j.
template <class Fn>
STRATA_HOST_DEVICE void for_each_column_of(const ColumnsGeometry& g, int64_t c, int64_t h, int64_t w, Fn&& fn) {
  for (int64_t i = 0; i < g.kernel_h; ++i) {
    const int64_t top = h + g.pad_h - i * g.dilation_h;
    if (top < 0) break;  // later taps only move further up
    if (top % g.stride_h != 0 || top / g.stride_h >= g.out_h) continue;
    for (int64_t j = 0; j < g.kernel_w; ++j) {
      const int64_t left = w + g.pad_w - j * g.dilation_w;
      if (left < 0) break;
      if (left % g.stride_w != 0 || left / g.stride_w >= g.out_w) continue;
      fn((c * g.kernel_h + i) * g.kernel_w + j, top / g.stride_h * g.out_w + left / g.stride_w);
    }
  }
}

// How many samples one im2col buffer holds: as many as fit in `budget_elements` (at least one,
// at most the batch).
constexpr int64_t samples_per_chunk(int64_t batch, int64_t sample_elements, int64_t budget_elements) {
  if (batch <= 0) return 1;
  return std::clamp<int64_t>(budget_elements / std::max<int64_t>(sample_elements, 1), 1, batch);
}

}  // namespace strata::cuda::detail
