// §6's normal directions {W S}: the change of the logits along them, and when it is a rescaling.
#include "refutation_proofs.h"
#include "s6_normal_directions.h"

#include "claim_builder.h"
#include "claim_groups.h"

namespace stiefel::certificates {
namespace {

constexpr const char* kGenerator =
    "attention problems: n in [2,7] tokens, d in [2,12], r in [2,d], token scale 10^[-1,1], "
    "head 0's frames W_Q, W_K in St(d,r); S symmetric r x r";
constexpr const char* kResidual =
    "||dL - alpha L||_F with dL = X W_Q S W_K^T X^T, L = X W_Q W_K^T X^T and alpha = <dL, L>/<L, L>, "
    "normalised by ||X||_F^2 ||S||_F; factor n + d";

Claim normal_rescale() {
  Claim c = make_claim("s6-normal-directions-rescale-logits", "§6 (why the constraint restricts)", "identity",
                       "The normal directions {W S : S in Sym(r)} that the constraint removes rescale the "
                       "logits: moving W_Q to W_Q (I + t S) multiplies X W_Q W_K^T X^T by a scalar.");
  c.generator = std::string(kGenerator) + ", S a random symmetric matrix";
  c.residual = kResidual;
  c.proof = {&prove_normal_directions_rescale, &prove_normal_directions_rescale_scalar,
             "the counterexample with S = c I, the normal direction that does rescale the logits"};
  c.expected = Expected::kRefuted;
  c.analysis =
      "The logits become X W_Q (I + t S) W_K^T X^T: a rescaling only when S = c I_r. For r >= 2 a "
      "generic S reweights the directions of W_Q, so the restriction removes more than a logit scale; "
      "s6-normal-scalar-direction-rescales certifies the corrected statement.";
  c.generator_fn = [] { return gen::attention(2); };
  set_check(c, &check_normal_rescale<double>, &check_normal_rescale<mp50>,
            {{NormalRescaleMutant::kNearScalar, "near-scalar-direction",
              "S = c I + 1e-6 E (E random symmetric): a direction 1e-6 from a rescaling"}});
  return c;
}

Claim normal_rescale_scalar() {
  Claim c = make_claim("s6-normal-scalar-direction-rescales", "§6 (corrected)", "identity",
                       "Corrected: the normal direction W S rescales the logits exactly when S = c I_r (the "
                       "decay direction of Prop. 8), by the factor 1 + t c; for r = 1 that is every normal "
                       "direction.");
  c.generator = std::string(kGenerator) + ", S = c I_r with c in [1/2, 2]";
  c.residual = kResidual;
  c.analysis = "X W_Q (c I) W_K^T X^T = c L.";
  c.generator_fn = [] { return gen::attention(2); };
  set_check(c, &check_normal_rescale_scalar<double>, &check_normal_rescale_scalar<mp50>,
            {{NormalRescaleMutant::kNearScalar, "near-scalar-direction",
              "S = c I + 1e-6 E (E random symmetric): a direction 1e-6 from a rescaling"}});
  return c;
}

}  // namespace

std::vector<Claim> s6_normal_directions_claims() { return {normal_rescale(), normal_rescale_scalar()}; }

}  // namespace stiefel::certificates
