# Shared by the scripts of hack/: the repository's modules and a file-based module proxy built
# from its own commits. Source it; it sets no options of the caller's shell.

# The modules a release tags, each after the modules it requires: the library first.
# bench/, e2e/ and hack/ are tools of the repository, never required by users: not released.
release_modules=(. controllerruntime examples/prometheus examples/controller examples/manager examples/sharded)

# The module path of the library; the nested modules' paths are it plus their directory.
root_module=github.com/typedkube/informer

# module_path DIR prints the module path of the module in directory DIR (relative to the root).
module_path() {
	if [ "$1" = . ]; then echo "$root_module"; else echo "$root_module/$1"; fi
}

# tag_name DIR VERSION prints the git tag of the module in DIR at VERSION (vX.Y.Z for the root,
# DIR/vX.Y.Z for a nested module, as the go command looks them up).
tag_name() {
	if [ "$1" = . ]; then echo "$2"; else echo "$1/$2"; fi
}

# required_version DIR MODULE prints the version of MODULE that DIR's go.mod requires, or nothing.
required_version() {
	[ -f "$1/go.mod" ] || return 0
	go mod edit -json "$1/go.mod" | awk -v m="\"$2\"" '$1 == "\"Path\":" && $2 == m"," { getline; gsub(/[",]/, "", $2); print $2 }'
}

# modproxy runs hack/cmd/modproxy (built into the Go build cache on first use).
modproxy() {
	go run -C "$hack_dir" ./cmd/modproxy "$@"
}

# with_proxy DIR CMD... runs CMD with the go command fetching this repository's modules from the
# file proxy in DIR and everything else as configured (the public proxy), outside any go.work.
# GONOSUMDB: the checksum database knows nothing of versions served only here; -mod=mod lets a
# build add their go.sum lines.
with_proxy() {
	local dir=$1
	shift
	env GOPROXY="file://$dir,$(go env GOPROXY)" GONOSUMDB="$root_module" \
		GOFLAGS="$(go env GOFLAGS) -mod=mod" GOWORK=off "$@"
}

# serve_required PROXY DIR... adds to the file proxy in PROXY the versions of this repository's
# modules that the go.mod files of the modules in DIR... require, and those that the go.mod
# files of these versions require in turn: a pseudo-version is served from the commit it names,
# a release version from the module's tag.
serve_required() {
	local proxy=$1 dir m v rev gomod
	shift
	local -a queue=()
	local -A seen=()
	for dir in "$@"; do
		for m in "${release_modules[@]}"; do
			v=$(required_version "$dir" "$(module_path "$m")")
			[ -n "$v" ] && queue+=("$m@$v")
		done
	done
	while [ ${#queue[@]} -gt 0 ]; do
		m=${queue[0]%@*} v=${queue[0]#*@}
		queue=("${queue[@]:1}")
		[ -z "${seen[$m@$v]:-}" ] || continue
		seen[$m@$v]=1
		if [[ $v =~ -([0-9a-f]{12})$ ]]; then
			rev=${BASH_REMATCH[1]}
		else
			rev=$(tag_name "$m" "$v")
		fi
		modproxy -repo "$repo_dir" -rev "$rev" -version "$v" -out "$proxy" "$m"
		# What that version's go.mod requires of ours, from the proxy just written.
		gomod=$(mktemp -d)
		mkdir -p "$gomod/$m"
		cp "$proxy/$(module_path "$m")/@v/$v.mod" "$gomod/$m/go.mod"
		local o w
		for o in "${release_modules[@]}"; do
			w=$(required_version "$gomod/$m" "$(module_path "$o")")
			[ -n "$w" ] && queue+=("$o@$w")
		done
		rm -rf "$gomod"
	done
}

hack_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_dir=$(cd "$hack_dir/.." && pwd)
