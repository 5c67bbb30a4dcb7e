# The CPU held-out validation pipeline (scripts/validate-cpu.sh): profiles the calibration
# grid (`--preset calibration`: calibration-5-cpu.json's blocks, ops timed inside them, and
# gemm-rows-cpu.json's GEMMs), configs/grids/holdout-cpu.json and holdout-2-cpu.json on this
# machine's real kernels, calibrates on the first (checked on the second) and validates on the
# second and third. It
# fails when any step fails (bad input, a runtime error, a missing op in the fit); the errors
# are printed against a 15 % median but not asserted (--report-only): tests assert no timing,
# and on a shared CI machine the scores swing with the load. Label `slow`: `ctest -LE slow`
# skips it. Its time is the machine's: about 10 minutes on two quiet cores, 15 and more through
# a slow spell of a shared VM (a CI run on 2026-11-28 spent 807 s on the calibration grid alone,
# its anchor p90 +36 %, 61 takes measured again), hence a limit of 30 minutes. Include from
# tests/cli/CMakeLists.txt:
#   include("${CMAKE_CURRENT_SOURCE_DIR}/validate_cpu.cmake")
add_test(NAME cli.validate_cpu
  COMMAND "${MODSIM_SOURCE_DIR}/scripts/validate-cpu.sh" --modsim "$<TARGET_FILE:modsim>" --max-error 15
          --report-only)
set_tests_properties(cli.validate_cpu PROPERTIES LABELS slow TIMEOUT 1800 RUN_SERIAL TRUE)
