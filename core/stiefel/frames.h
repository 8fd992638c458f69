// Frame layouts. One head: W ∈ St(d,r). H independent heads: (W_1, …, W_H) ∈ St(d,r)^H, one polar
// retraction per head (the configuration of every experiment, §3.2). Block-orthogonal variant:
// [W_1 … W_H] ∈ St(d, H·r), which also makes the heads mutually orthogonal (W_iᵀW_j = 0).
#pragma once

#include <stdexcept>
#include <string>

#include "random.h"
#include "scalar.h"

namespace stiefel {

struct FrameShape {
  Index d = 0;
  Index r = 0;
};

// Throws std::invalid_argument unless 1 ≤ r ≤ d.
inline void check_frame_shape(FrameShape s) {
  if (s.r < 1 || s.d < s.r)
    throw std::invalid_argument("frame shape d=" + std::to_string(s.d) + ", r=" + std::to_string(s.r) +
                                ": St(d,r) needs 1 <= r <= d");
}

// Throws std::invalid_argument unless the block-orthogonal frame St(d, H·r) exists (H·r ≤ d).
inline void check_block_orthogonal_shape(FrameShape s, Index heads) {
  check_frame_shape(s);
  if (heads < 1 || heads * s.r > s.d)
    throw std::invalid_argument("block-orthogonal heads: H*r = " + std::to_string(heads) + "*" + std::to_string(s.r) +
                                " = " + std::to_string(heads * s.r) + " exceeds d = " + std::to_string(s.d) +
                                "; St(d, H*r) needs H*r <= d");
}

// [W_1 … W_H]: d×(H·r).
template <class Scalar>
Matrix<Scalar> stack_heads(const Frames<Scalar>& heads) {
  if (heads.empty()) throw std::invalid_argument("stack_heads: no heads");
  const Index d = heads.front().rows(), r = heads.front().cols();
  check_block_orthogonal_shape({d, r}, static_cast<Index>(heads.size()));
  Matrix<Scalar> block(d, r * static_cast<Index>(heads.size()));
  for (std::size_t h = 0; h < heads.size(); ++h) {
    if (heads[h].rows() != d || heads[h].cols() != r)
      throw std::invalid_argument("stack_heads: head " + std::to_string(h) + " has another shape");
    block.middleCols(static_cast<Index>(h) * r, r) = heads[h];
  }
  return block;
}

// Splits a d×(H·r) block-orthogonal frame into its H heads.
template <class Scalar>
Frames<Scalar> split_heads(const Matrix<Scalar>& block, Index heads) {
  if (heads < 1 || block.cols() % heads != 0)
    throw std::invalid_argument("split_heads: " + std::to_string(block.cols()) + " columns do not split into " +
                                std::to_string(heads) + " heads");
  const Index r = block.cols() / heads;
  check_block_orthogonal_shape({block.rows(), r}, heads);
  Frames<Scalar> out;
  for (Index h = 0; h < heads; ++h) out.push_back(block.middleCols(h * r, r));
  return out;
}

// H independent uniform points of St(d,r).
template <class Scalar>
Frames<Scalar> random_frames(Rng& rng, FrameShape s, Index heads) {
  check_frame_shape(s);
  Frames<Scalar> out;
  for (Index h = 0; h < heads; ++h) out.push_back(random_stiefel<Scalar>(rng, s.d, s.r));
  return out;
}

// A uniform point of St(d, H·r), returned as its H mutually orthogonal heads.
template <class Scalar>
Frames<Scalar> random_block_orthogonal_frames(Rng& rng, FrameShape s, Index heads) {
  check_block_orthogonal_shape(s, heads);
  return split_heads<Scalar>(random_stiefel<Scalar>(rng, s.d, heads * s.r), heads);
}

}  // namespace stiefel
