// Every group's checks and figures, for the two instantiation units (checks_double.cpp and
// checks_mp50.cpp), in the paper's order.
#pragma once

#include "implemented_update.h"
#include "orders.h"
#include "prop1_attention_gauge.h"
#include "prop2_projector.h"
#include "prop3_scale_invariance.h"
#include "prop6_rotation.h"
#include "prop7_equivariance.h"
#include "prop8_decay.h"
#include "s2_polar.h"
#include "s33_codebook.h"
#include "s53_canonical_metric.h"
#include "s53_displacement.h"
#include "s6_normal_directions.h"

// clang-format off
#define STIEFEL_ALL_CHECKS(X)                                                                      \
  STIEFEL_PROP1_CHECKS(X) STIEFEL_PROP2_CHECKS(X) STIEFEL_PROP3_CHECKS(X)                          \
  STIEFEL_S53_DISPLACEMENT_CHECKS(X) STIEFEL_PROP6_CHECKS(X) STIEFEL_PROP7_CHECKS(X)               \
  STIEFEL_PROP8_CHECKS(X) STIEFEL_S2_POLAR_CHECKS(X) STIEFEL_ORDERS_CHECKS(X)                      \
  STIEFEL_S53_CANONICAL_CHECKS(X) STIEFEL_IMPLEMENTED_UPDATE_CHECKS(X) STIEFEL_S33_CODEBOOK_CHECKS(X)   \
  STIEFEL_S6_NORMAL_CHECKS(X)
// clang-format on
// clang-format off
#define STIEFEL_ALL_FIGURES(F)                                                                     \
  STIEFEL_PROP1_FIGURES(F) STIEFEL_PROP2_FIGURES(F) STIEFEL_S53_DISPLACEMENT_FIGURES(F)            \
  STIEFEL_PROP6_FIGURES(F) STIEFEL_PROP7_FIGURES(F) STIEFEL_IMPLEMENTED_UPDATE_FIGURES(F)            \
  STIEFEL_ORDERS_FIGURES(F)
// clang-format on
