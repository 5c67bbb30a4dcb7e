#!/usr/bin/env bash
# The explorer's screenshots in docs/ (docs/explorer.md, "Screenshots"): every tab at 1600x1000, and the
# same at 1280x800 under docs/gui-1280x800/, rendered headless from the shipped files.
#
#   scripts/gui-screenshots.sh [BUILD_DIR]     (default build; needs the GUI built)
set -euo pipefail
cd "$(dirname "$0")/.."
gui="${1:-build}/gui/modsim-gui"
[[ -x "$gui" ]] || { echo "gui-screenshots: no $gui (build with Qt 6 first)" >&2; exit 2; }
export QT_QPA_PLATFORM=offscreen
# Settings of a throwaway user: no recent files or folders of the machine's user leak in.
export XDG_CONFIG_HOME; XDG_CONFIG_HOME=$(mktemp -d)
trap 'rm -rf "$XDG_CONFIG_HOME"' EXIT
shot() {  # NAME SIZE ARGS...
  local name="$1" size="$2"; shift 2
  local dir=docs
  [[ "$size" == 1600x1000 ]] || { dir="docs/gui-$size"; mkdir -p "$dir"; }
  "$gui" "$@" --size "$size" --screenshot "$dir/$name.png" 2>/dev/null
  echo "$dir/$name.png"
}
for size in 1600x1000 1280x800; do
  shot gui-design-space "$size" mod-220m
  shot gui-layers "$size" mod-220m --tab layers
  shot gui-timeline "$size" mod-220m --mode decode --tab timeline
  shot gui-serving "$size" mod-220m --tab serving
  shot gui-sampling "$size" mod-220m --mode decode --tab serving --baseline dense-220m
  shot gui-validation "$size" mod-220m --tab validation
  shot gui-parallel "$size" mod-70b --hardware h100-sxm --tab parallel
  shot gui-training "$size" mod-220m --mode train --tab training
  shot gui-question "$size" mod-1b --hardware h200 --mode decode --baseline dense-1b
  # A tab without a line above (the registry, gui/core/tabs/tabs.cpp, lists it): mod-220m on it.
  for tab in $("$gui" --list-tabs 2>/dev/null); do
    case " design-space layers training timeline serving validation parallel " in
      *" $tab "*) ;;
      *) shot "gui-$tab" "$size" mod-220m --tab "$tab" ;;
    esac
  done
done
