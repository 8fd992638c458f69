// The checkpoint module: a round trip restores the run bit for bit, and every damaged, foreign or
// mismatched checkpoint is refused with std::invalid_argument naming the file — never another
// exception, never a silent load.
#include <gtest/gtest.h>
#include <zlib.h>

#include <random>
#include <stiefel/training/checkpoint.h>

namespace stiefel::training {
namespace {

ModelSpec small_spec(std::int64_t layers = 1, std::int64_t r = 3) {
  ModelSpec s;
  s.input_dim = 6;
  s.tokens = 4;
  s.classes = 3;
  s.d = 8;
  s.heads = 2;
  s.r = r;
  s.layers = layers;
  return s;
}

// A model with its two optimisers after STEPS steps on random data.
struct TrainState {
  explicit TrainState(std::int64_t layers = 1, bool stiefel = true, std::int64_t r = 3) : model(small_spec(layers, r)) {
    auto gen = at::detail::createCPUGenerator(7);
    init_frames(model, stiefel, gen);
    std::vector<torch::Tensor> frames, rest;
    std::set<const void*> frame_set;
    for (auto& attn : model->attention_layers()) {
      frame_set.insert(attn->wq.unsafeGetTensorImpl());
      frame_set.insert(attn->wk.unsafeGetTensorImpl());
    }
    for (auto& p : model->parameters())
      (stiefel && frame_set.count(p.unsafeGetTensorImpl()) ? frames : rest).push_back(p);
    adamw = std::make_unique<torch::optim::AdamW>(rest, torch::optim::AdamWOptions(1e-3));
    if (stiefel) frame_opt = std::make_unique<FrameOptimizer>(frames, FrameHyper{});
  }
  void steps(int n) {
    torch::manual_seed(3);
    for (int t = 0; t < n; ++t) {
      adamw->zero_grad();
      if (frame_opt) frame_opt->zero_grad();
      const auto x = torch::randn({5, 4, 6});
      const auto y = torch::randint(0, 3, {5});
      torch::cross_entropy_loss(model->forward(x), y).backward();
      adamw->step();
      if (frame_opt) frame_opt->step();
    }
  }
  checkpoint::State state() { return {&model, adamw.get(), frame_opt.get()}; }
  Classifier model;
  std::unique_ptr<torch::optim::AdamW> adamw;
  std::unique_ptr<FrameOptimizer> frame_opt;
};

const nlohmann::json kOptions = {{"arm", "b2"}, {"seed", 0}, {"riemann_lr", 1.0}};

// The outcome of restoring BYTES into a fresh run: "" on success, else the refusal's message.
// Any exception other than std::invalid_argument fails the test.
std::string restore_into_fresh(const std::string& bytes, const nlohmann::json& options = kOptions,
                               std::int64_t layers = 1, bool stiefel = true) {
  TrainState fresh(layers, stiefel);
  auto st = fresh.state();
  try {
    checkpoint::restore(bytes, "ckpt.pt", options, st);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Checkpoint, RoundTripRestoresTheRunBitForBit) {
  TrainState a;
  a.steps(3);
  const std::string bytes = checkpoint::serialise(a.state(), 2, 3, kOptions);
  TrainState b;
  auto st = b.state();
  EXPECT_EQ(checkpoint::restore(bytes, "ckpt.pt", kOptions, st), 2);
  // The archive's bytes are not canonical (LibTorch numbers its TorchScript types per process):
  // the restored state is compared by its tensors, before and after one more step.
  const auto pa0 = a.model->parameters(), pb0 = b.model->parameters();
  for (std::size_t i = 0; i < pa0.size(); ++i) EXPECT_TRUE(torch::equal(pa0[i], pb0[i])) << i;
  a.steps(1);
  b.steps(1);
  const auto pa = a.model->parameters(), pb = b.model->parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i])) << i;
}

// The AdamW moments are written by parameter name, in the optimiser's order (LibTorch's own save keys
// them by memory address); a checkpoint written in LibTorch's layout, as every checkpoint before the
// canonical one, still restores the run bit for bit.
TEST(Checkpoint, AdamWMomentsAreKeyedByParameterNameAndTheOldLayoutStillRestores) {
  TrainState a;
  a.steps(3);
  const std::string bytes = checkpoint::serialise(a.state(), 2, 3, kOptions);
  {
    torch::serialize::InputArchive archive, adam, moments;
    std::istringstream in(bytes);
    archive.load_from(in);
    EXPECT_FALSE(archive.try_read(checkpoint::kAdamW, adam)) << "LibTorch's address-keyed layout is still written";
    ASSERT_TRUE(archive.try_read(checkpoint::kAdamWByName, adam));
    int named = 0;
    for (const auto& item : a.model->named_parameters()) {
      std::string key;
      for (const char ch : item.key()) key += ch == '.' ? std::string("__") : std::string(1, ch);
      named += adam.try_read(key, moments);
    }
    EXPECT_EQ(named, int(a.adamw->state().size())) << "not every moment is named by its parameter";
  }

  torch::serialize::OutputArchive old, model_archive, adam_archive, frame_archive;
  a.model->save(model_archive);
  a.adamw->save(adam_archive);
  a.frame_opt->save(frame_archive);
  old.write(checkpoint::kModel, model_archive);
  old.write(checkpoint::kAdamW, adam_archive);
  old.write(checkpoint::kFrames, frame_archive);
  old.write(checkpoint::kEpoch, torch::tensor(std::int64_t(2)));
  old.write(checkpoint::kGlobalStep, torch::tensor(std::int64_t(3)));
  old.write(checkpoint::kOptions, c10::IValue(kOptions.dump()));
  std::ostringstream old_bytes;
  old.save_to(old_bytes);
  std::vector<torch::Tensor> stepped;
  for (const std::string& form : {bytes, old_bytes.str()}) {
    TrainState b;
    auto st = b.state();
    ASSERT_EQ(checkpoint::restore(form, "ckpt.pt", kOptions, st), 2);
    ASSERT_EQ(b.adamw->state().size(), a.adamw->state().size());
    for (std::size_t g = 0; g < a.adamw->param_groups().size(); ++g)
      for (std::size_t i = 0; i < a.adamw->param_groups()[g].params().size(); ++i) {
        const auto& pa = a.adamw->param_groups()[g].params()[i];
        const auto& pb = b.adamw->param_groups()[g].params()[i];
        const auto& sa = static_cast<const torch::optim::AdamWParamState&>(
            *a.adamw->state().at(optimizer_state_key(a.adamw->state(), pa)));
        const auto& sb = static_cast<const torch::optim::AdamWParamState&>(
            *b.adamw->state().at(optimizer_state_key(b.adamw->state(), pb)));
        EXPECT_EQ(sa.step(), sb.step());
        EXPECT_TRUE(torch::equal(sa.exp_avg(), sb.exp_avg())) << g << " " << i;
        EXPECT_TRUE(torch::equal(sa.exp_avg_sq(), sb.exp_avg_sq())) << g << " " << i;
      }
    b.steps(1);
    for (const auto& p : b.model->parameters()) stepped.push_back(p.detach().clone());
  }
  // Both restored runs take the next step as the original does.
  a.steps(1);
  const auto pa = a.model->parameters();
  ASSERT_EQ(stepped.size(), 2 * pa.size());
  for (std::size_t i = 0; i < stepped.size(); ++i) EXPECT_TRUE(torch::equal(pa[i % pa.size()], stepped[i])) << i;
}

// A canonical checkpoint whose AdamW hyper-parameters are not the run's is refused, as LibTorch's
// layout is.
TEST(Checkpoint, RefusesCanonicalAdamWStateOfOtherHyperParameters) {
  TrainState a;
  a.steps(1);
  const std::string bytes = checkpoint::serialise(a.state(), 1, 1, kOptions);
  TrainState b;
  static_cast<torch::optim::AdamWOptions&>(b.adamw->param_groups()[0].options()).eps(1e-6);
  auto st = b.state();
  try {
    checkpoint::restore(bytes, "ckpt.pt", kOptions, st);
    ADD_FAILURE() << "other AdamW hyper-parameters were restored";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("ckpt.pt: its AdamW hyper-parameters"), std::string::npos) << e.what();
  }
}

TEST(Checkpoint, RefusesOtherOptionsNamingEachSetting) {
  TrainState a;
  a.steps(1);
  const std::string bytes = checkpoint::serialise(a.state(), 1, 1, kOptions);
  auto other = kOptions;
  other["riemann_lr"] = 0.5;
  other["arm"] = "b2m";
  const std::string msg = restore_into_fresh(bytes, other);
  EXPECT_NE(msg.find("ckpt.pt"), std::string::npos) << msg;
  EXPECT_NE(msg.find("riemann_lr (1.0 → 0.5)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("arm (\"b2\" → \"b2m\")"), std::string::npos) << msg;
}

TEST(Checkpoint, RefusesAnotherModelAndAMissingFrameState) {
  TrainState a;
  a.steps(1);
  const std::string bytes = checkpoint::serialise(a.state(), 1, 1, kOptions);
  const std::string deeper = restore_into_fresh(bytes, kOptions, /*layers=*/2);
  EXPECT_NE(deeper.find("ckpt.pt"), std::string::npos) << deeper;
  // A Euclidean arm's checkpoint has no frame state: a Stiefel run refuses it.
  TrainState euclid(1, /*stiefel=*/false);
  euclid.steps(1);
  const std::string no_frames = restore_into_fresh(checkpoint::serialise(euclid.state(), 1, 1, kOptions));
  EXPECT_NE(no_frames.find("ckpt.pt"), std::string::npos) << no_frames;
  EXPECT_FALSE(no_frames.empty());
}

// A stored tensor of another shape is refused before it reaches the model. LibTorch's own
// Module::load would hand it to the live parameter's set_ (and, for a damaged one, later free a
// pointer it never allocated): a refused checkpoint must leave the run exactly as it was.
TEST(Checkpoint, RefusesATensorOfAnotherShapeAndLeavesTheModelUntouched) {
  TrainState narrower(1, true, /*r=*/2);
  narrower.steps(1);
  const std::string bytes = checkpoint::serialise(narrower.state(), 1, 1, kOptions);
  TrainState fresh;
  std::vector<torch::Tensor> before;
  for (const auto& p : fresh.model->parameters()) before.push_back(p.detach().clone());
  auto st = fresh.state();
  try {
    checkpoint::restore(bytes, "ckpt.pt", kOptions, st);
    ADD_FAILURE() << "a checkpoint of another shape was restored";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("ckpt.pt: model tensor"), std::string::npos) << e.what();
  }
  const auto after = fresh.model->parameters();
  ASSERT_EQ(after.size(), before.size());
  for (std::size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].sizes(), before[i].sizes()) << i;
    EXPECT_TRUE(after[i].sizes() == before[i].sizes() && torch::equal(after[i], before[i])) << i;
  }
}

// Truncations and random byte damage: each is refused (or, where the damage misses everything the
// loader reads, restored); nothing else escapes. The resume path verifies the SHA-256 the run
// record names before this loader sees a byte; this is the loader's own robustness.
TEST(Checkpoint, DamagedBytesAreRefusedNeverCrash) {
  TrainState a;
  a.steps(1);
  const std::string bytes = checkpoint::serialise(a.state(), 1, 1, kOptions);
  for (const std::size_t keep : {std::size_t(0), std::size_t(1), std::size_t(22), bytes.size() / 2, bytes.size() - 1}) {
    const std::string msg = restore_into_fresh(bytes.substr(0, keep));
    EXPECT_NE(msg.find("ckpt.pt"), std::string::npos) << "truncated to " << keep << ": " << msg;
  }
  std::mt19937_64 rng(11);
  int refused = 0;
  for (int trial = 0; trial < 60; ++trial) {
    std::string damaged = bytes;
    const std::size_t at = rng() % damaged.size();
    damaged[at] = char(damaged[at] ^ char(1 + rng() % 255));
    const std::string msg = restore_into_fresh(damaged);
    if (!msg.empty()) {
      ++refused;
      EXPECT_NE(msg.find("ckpt.pt"), std::string::npos) << msg;
    }
  }
  EXPECT_GT(refused, 0);
}

// LibTorch trusts data.pkl's storage references: a key naming another tensor's record gives a
// tensor whose memory is not its own (the fuzzer found it freeing a pointer never allocated).
// Each key must be used once and match its record's size.
// Little-endian field of N bytes at AT.
std::uint32_t field(const std::string& b, std::size_t at, int n) {
  std::uint32_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | std::uint8_t(b[at + std::size_t(i)]);
  return v;
}

// Recomputes the CRC-32 of every stored record (central directory and local header), as a forger
// would after editing a record: what is refused then is refused for what the edit means.
void refresh_crcs(std::string& b) {
  for (std::size_t c = b.find(std::string("PK\x01\x02", 4)); c != std::string::npos;
       c = b.find(std::string("PK\x01\x02", 4), c + 4)) {
    if (field(b, c + 10, 2) != 0) continue;  // deflated: left as it is
    const std::size_t local = field(b, c + 42, 4), size = field(b, c + 20, 4);
    const std::size_t data = local + 30 + field(b, local + 26, 2) + field(b, local + 28, 2);
    const std::uint32_t crc = std::uint32_t(crc32(0L, reinterpret_cast<const Bytef*>(b.data() + data), uInt(size)));
    for (const std::size_t at : {c + 16, local + 14})
      for (int i = 0; i < 4; ++i) b[at + std::size_t(i)] = char((crc >> (8 * i)) & 0xff);
  }
}

// A bit flipped in a tensor's bytes: the record no longer matches its CRC-32.
TEST(Checkpoint, RefusesARecordThatDoesNotMatchItsCrc) {
  TrainState a;
  a.steps(1);
  std::string bytes = checkpoint::serialise(a.state(), 1, 1, kOptions);
  const std::size_t data = bytes.find("/data/0");
  ASSERT_NE(data, std::string::npos);
  const std::size_t local = bytes.rfind(std::string("PK\x03\x04", 4), data);
  const std::size_t start = local + 30 + field(bytes, local + 26, 2) + field(bytes, local + 28, 2);
  bytes[start + 3] = char(bytes[start + 3] ^ 0x10);
  const std::string msg = restore_into_fresh(bytes);
  EXPECT_NE(msg.find("its bytes do not match their CRC-32"), std::string::npos) << msg;
  refresh_crcs(bytes);  // the same bytes with a forged CRC: a readable archive of another state
  EXPECT_EQ(restore_into_fresh(bytes).find("CRC-32"), std::string::npos);
}

TEST(Checkpoint, RefusesAStorageKeyOfAnotherRecord) {
  TrainState a;
  a.steps(1);
  std::string bytes = checkpoint::serialise(a.state(), 1, 1, kOptions);
  const std::string first_key(
      "X\x01\x00\x00\x00"
      "0",
      6);  // BINUNICODE "0": the first storage's key
  const std::size_t at = bytes.find(first_key);
  ASSERT_NE(at, std::string::npos);
  bytes[at + 5] = '1';  // now storage 1 is referenced twice
  refresh_crcs(bytes);
  const std::string msg = restore_into_fresh(bytes);
  EXPECT_NE(msg.find("ckpt.pt"), std::string::npos) << msg;
  EXPECT_NE(msg.find("storage 1"), std::string::npos) << msg;
}

// LibTorch's reader allocates a record at the size the ZIP directory declares: a damaged size field
// is refused before it is read (not a 2 GB allocation for a 60 kB file).
TEST(Checkpoint, RefusesARecordLargerThanTheFile) {
  TrainState a;
  a.steps(1);
  std::string bytes = checkpoint::serialise(a.state(), 1, 1, kOptions);
  const std::size_t dir = bytes.find(std::string("PK\x01\x02", 4));
  ASSERT_NE(dir, std::string::npos);
  for (const std::size_t field : {std::size_t(20), std::size_t(24)})  // compressed and uncompressed size
    for (int i = 0; i < 4; ++i) bytes[dir + field + std::size_t(i)] = i == 3 ? '\x70' : '\x00';
  const std::string msg = restore_into_fresh(bytes);
  EXPECT_NE(msg.find("does not fit the file"), std::string::npos) << msg;
}

}  // namespace
}  // namespace stiefel::training
