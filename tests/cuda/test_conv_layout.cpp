// Tests for cuda/conv_layout.h on the host: the im2col entries the CUDA kernels read, and the
// col2im gather that replaces the CPU's scatter, against a plain rendering of ops/conv.cpp's loops.
#include <doctest/doctest.h>

#include <strata/cuda/conv_layout.h>

#include <utility>
#include <vector>

using namespace strata::cuda::detail;

namespace {

ColumnsGeometry make_geometry(int64_t channels, int64_t height, int64_t width, int64_t kernel_h, int64_t kernel_w,
                              int64_t stride, int64_t pad, int64_t dilation) {
  ColumnsGeometry g;
  g.channels = channels, g.height = height, g.width = width, g.kernel_h = kernel_h, g.kernel_w = kernel_w;
  g.stride_h = stride, g.stride_w = stride + 1, g.pad_h = pad, g.pad_w = pad, g.dilation_h = dilation;
  g.dilation_w = dilation;
  g.out_h = (height + 2 * g.pad_h - g.dilation_h * (kernel_h - 1) - 1) / g.stride_h + 1;
  g.out_w = (width + 2 * g.pad_w - g.dilation_w * (kernel_w - 1) - 1) / g.stride_w + 1;
  g.row_stride = g.positions();
  g.sample_stride = g.rows() * g.positions();
  return g;
}

// ops/conv.cpp's im2col loop, producing for each (row, position) the input offset it copies
// (-1 for padding).
std::vector<int64_t> cpu_im2col_sources(const ColumnsGeometry& s) {
  const int64_t plane = s.positions();
  std::vector<int64_t> sources(static_cast<size_t>(s.rows() * plane), -2);
  for (int64_t c = 0; c < s.channels; ++c)
    for (int64_t i = 0; i < s.kernel_h; ++i)
      for (int64_t j = 0; j < s.kernel_w; ++j) {
        int64_t* row = sources.data() + ((c * s.kernel_h + i) * s.kernel_w + j) * plane;
        for (int64_t oh = 0; oh < s.out_h; ++oh) {
          const int64_t h = oh * s.stride_h - s.pad_h + i * s.dilation_h;
          for (int64_t ow = 0; ow < s.out_w; ++ow) {
            const int64_t w = ow * s.stride_w - s.pad_w + j * s.dilation_w;
            row[oh * s.out_w + ow] = h >= 0 && h < s.height && w >= 0 && w < s.width ? (c * s.height + h) * s.width + w : -1;
          }
        }
      }
  return sources;
}

const ColumnsGeometry kGeometries[] = {
    make_geometry(2, 5, 6, 3, 3, 1, 1, 1),  // same-size output
    make_geometry(3, 7, 7, 3, 2, 2, 0, 1),  // strided, uneven kernel
    make_geometry(1, 9, 8, 2, 3, 2, 2, 2),  // dilated and padded
    make_geometry(2, 4, 4, 1, 1, 1, 0, 1),  // pointwise
    make_geometry(1, 6, 5, 3, 3, 3, 1, 3),  // stride and dilation 3
};

}  // namespace

TEST_CASE("conv_layout: im2col_source reads what the CPU's im2col copies") {
  for (const ColumnsGeometry& g : kGeometries) {
    const std::vector<int64_t> expected = cpu_im2col_sources(g);
    for (int64_t row = 0; row < g.rows(); ++row)
      for (int64_t position = 0; position < g.positions(); ++position)
        CHECK(im2col_source(g, row, position) == expected[static_cast<size_t>(row * g.positions() + position)]);
  }
}

TEST_CASE("conv_layout: for_each_column_of visits exactly the entries im2col copies from an element, in the CPU's order") {
  for (const ColumnsGeometry& g : kGeometries) {
    // The CPU's col2im adds entry (row, position) into input offset source; per element, the
    // order is increasing row (then position; one position per row here).
    std::vector<std::vector<std::pair<int64_t, int64_t>>> expected(static_cast<size_t>(g.channels * g.height * g.width));
    for (int64_t row = 0; row < g.rows(); ++row)
      for (int64_t position = 0; position < g.positions(); ++position) {
        const int64_t source = im2col_source(g, row, position);
        if (source >= 0) expected[static_cast<size_t>(source)].push_back({row, position});
      }
    for (int64_t c = 0; c < g.channels; ++c)
      for (int64_t h = 0; h < g.height; ++h)
        for (int64_t w = 0; w < g.width; ++w) {
          std::vector<std::pair<int64_t, int64_t>> visited;
          for_each_column_of(g, c, h, w, [&](int64_t row, int64_t position) { visited.push_back({row, position}); });
          CHECK(visited == expected[static_cast<size_t>((c * g.height + h) * g.width + w)]);
        }
  }
}

TEST_CASE("conv_layout: column offsets address the per-sample and the wide layouts") {
  ColumnsGeometry g = make_geometry(2, 5, 6, 3, 3, 1, 1, 1);
  const int64_t samples = 3, rows = g.rows(), positions = g.positions();
  for (const bool wide : {false, true}) {
    g.row_stride = wide ? samples * positions : positions;
    g.sample_stride = wide ? positions : rows * positions;
    std::vector<int> hits(static_cast<size_t>(samples * rows * positions), 0);
    for (int64_t n = 0; n < samples; ++n)
      for (int64_t row = 0; row < rows; ++row)
        for (int64_t position = 0; position < positions; ++position)
          ++hits[static_cast<size_t>(g.column_offset(n, row, position))];
    for (int count : hits) CHECK(count == 1);
    // Wide: one row of a group holds every sample's positions back to back.
    if (wide) CHECK(g.column_offset(1, 0, 0) == positions);
  }
}

TEST_CASE("conv_layout: samples_per_chunk fills the buffer budget, at least one sample, at most the batch") {
  CHECK(samples_per_chunk(8, 100, 1000) == 8);
  CHECK(samples_per_chunk(32, 100, 1000) == 10);
  CHECK(samples_per_chunk(32, 5000, 1000) == 1);
  CHECK(samples_per_chunk(0, 100, 1000) == 1);
  CHECK(samples_per_chunk(4, 0, 1000) == 4);
}
