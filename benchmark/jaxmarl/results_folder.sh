# Sourced by benchmark/smax_hard_10m.sh (its jaxmarl mode) and benchmark/jaxmarl/device_runs.sh: the one rule naming
# the results folder of JaxMARL's hard-map runs, by the values they train with and the SMAX release they step:
#   jaxmarl_results_folder VALUES [WHEEL_DIR]
# prints benchmark/results/smax_hard_10m[_mava][_smaxRELEASE]_jaxmarl: VALUES own (no part) or mava
# (jaxmarl_baseline.py --values); WHEEL_DIR another jaxmarl release's wheel, unzipped, whose SMAX the runs step
# (jaxmarl_baseline.py --smax-wheel), RELEASE its version without dots (0.0.2: _smax002). A bad VALUES or WHEEL_DIR:
# says why on stderr and returns 2.
jaxmarl_results_folder() {
  local values=$1 wheel=${2:-} folder=benchmark/results/smax_hard_10m info release
  [[ $values =~ ^(own|mava)$ ]] || { echo "JAXMARL_VALUES: own or mava, not '$values'" >&2 && return 2; }
  [ "$values" = own ] || folder+=_$values
  if [ -n "$wheel" ]; then
    info=("$wheel"/jaxmarl-*.dist-info)
    [ ${#info[@]} = 1 ] && [ -d "${info[0]}" ] && [ -d "$wheel/jaxmarl/environments/smax" ] ||
      { echo "SMAX_WHEEL: an unzipped jaxmarl wheel (one jaxmarl-*.dist-info, its SMAX), not '$wheel'" >&2 && return 2; }
    release=$(basename "${info[0]}" .dist-info) && release=${release#jaxmarl-}
    folder+=_smax${release//./}
  fi
  echo "${folder}_jaxmarl"
}
