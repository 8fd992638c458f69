// A run's checkpoint: the model, the AdamW and frame optimiser states, the epoch, the global step
// and the run's options, as one LibTorch archive. This module owns every key of the format; the
// trainer, the frame optimiser and `stiefel certify --checkpoint` read and write through it.
//
// Format (a torch::serialize archive):
//   model        the Classifier's parameters and buffers (LibTorch's module layout)
//   adamw        torch::optim::AdamW's state
//   frames       FrameOptimizer's state, for the Stiefel arms: frame<i>_{master,m,v,step} per
//                parameter i (float64 [H, d, r] master copy, first moment, second moment, step)
//   epoch        int64 scalar: the epochs completed
//   global_step  int64 scalar: the optimiser steps taken
//   options      string: the run's options (JSON); a resume refuses a checkpoint of other options
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "frame_optimizer.h"
#include "models.h"

namespace stiefel::training::checkpoint {

inline constexpr const char* kModel = "model";
inline constexpr const char* kAdamW = "adamw";                // LibTorch's own layout (address-keyed): read only
inline constexpr const char* kAdamWByName = "adamw_by_name";  // the canonical layout written
inline constexpr const char* kFrames = "frames";
inline constexpr const char* kEpoch = "epoch";
inline constexpr const char* kGlobalStep = "global_step";
inline constexpr const char* kOptions = "options";

// The key of frame parameter INDEX's FIELD inside the `frames` archive ("frame3_master").
std::string frame_key(std::int64_t index, const std::string& field);

// What a checkpoint holds; `frames` is null for the Euclidean arms.
struct State {
  Classifier* model = nullptr;
  torch::optim::AdamW* adamw = nullptr;
  FrameOptimizer* frames = nullptr;
};

// The checkpoint of STATE after EPOCH epochs and GLOBAL_STEP steps, serialised in memory (the
// caller writes it with io's checked writer: LibTorch's file writer cannot report a full disk).
std::string serialise(const State& state, std::int64_t epoch, std::int64_t global_step, const nlohmann::json& options);

// Restores STATE from BYTES, the checkpoint file NAME (named in every message), and returns its
// epoch. Refuses, with std::invalid_argument naming NAME and what was wrong, a checkpoint that is
// not a readable archive, holds other options than OPTIONS, lacks a key, or holds a tensor whose
// shape or type differs from the model's or the frame optimiser's. Nothing of STATE is used
// after a refusal (it may be partly overwritten).
std::int64_t restore(const std::string& bytes, const std::string& name, const nlohmann::json& options, State& state);

// The largest checkpoint and run record read: a checkpoint of the paper's models is a few MiB, a
// record at most 32 MiB (the largest committed is 0.73 MB; parsed JSON takes about 16 times its bytes).
inline constexpr std::uintmax_t kMaxCheckpointBytes = std::uintmax_t(1) << 30;
inline constexpr std::uintmax_t kMaxRecordBytes = std::uintmax_t(32) << 20;  // as reports::kMaxJsonBytes

// The bytes of the checkpoint file PATH: a regular file (not a FIFO or a device such as /dev/zero)
// of at most kMaxCheckpointBytes. Throws std::invalid_argument naming PATH otherwise.
std::string read_file(const std::filesystem::path& path);

// Refuses (std::invalid_argument naming NAME) bytes that LibTorch's archive reader must not see: a
// ZIP record that does not fit the file, or a pickle whose declared lengths or memo ids would make
// the reader allocate gigabytes. restore() runs it first; `stiefel certify --checkpoint` too.
void check_archive(const std::string& bytes, const std::string& name);

// The settings that differ between a stored option set and the current one, named for a message:
// "riemann_lr (1 → 0.5), arm ("b2" → "b2m")"; empty when they agree.
std::string differing_settings(const nlohmann::json& stored, const nlohmann::json& now);

}  // namespace stiefel::training::checkpoint
