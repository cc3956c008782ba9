defmodule ExZarr.Storage.Filesystem do
  @moduledoc """
  A directory tree on the local filesystem (`storage: :filesystem`), laid out like
  zarr-python's `LocalStore`: the key `"c/0/1"` is the file `<root>/c/0/1`.

  Options:
    * `:path` (required) - the root directory, or a `"file://"` URL. Relative paths are expanded
      against the current directory once, when the store is opened. The directory is created on
      the first write.
    * `:fsync` - when `true`, every write is flushed to disk before it replaces the old value,
      and the folder is synced after the rename, as is the parent of every folder a write
      makes (slower; an acknowledged write then survives power loss, not only crashes).
      Default `false`.
    * `:check_symlinks` - when `true` (default), a key whose path goes through a symlink that
      leads outside the root is rejected. Reads and writes open each key segment with
      `O_NOFOLLOW` and check links only when they meet one; deletes cost one `lstat` per key
      segment. `false` trusts the tree (keys still cannot name anything outside the root).

  Guarantees:
    * Writes are atomic: the value goes to a temporary file next to the target
      (`.<name>.tmp.<random>`), which is then renamed over it. A crash or a failed write leaves
      the old value or the new one, never a torn one; temporary files are never listed.
      Values given as iodata are written with one vectored write, without joining them first.
    * A write whose OS process dies before the rename leaves its temporary file. Deleting or
      overwriting a node removes all of them below it, deleting a key (as a resize does)
      removes the stale ones in its folder, and `sweep_temp_files/2` sweeps a whole store:
      see `ExZarr.Storage.Filesystem.TempFiles`.
    * No key reaches outside the root: keys are checked with `ExZarr.Storage.validate_key/1`, and
      a symlink inside the tree is followed only when its target is inside the root too (a best
      effort check: the tree must not be changed concurrently by a hostile process).
    * A read is one native call on a dirty I/O scheduler (open, size, read, close; no file
      server, no port round trips) into an exact-size binary, and ranged reads read only the
      requested bytes. A write is one native call too (missing directories, temporary file,
      write, rename).
    * A range that runs past the end of a value returns the bytes that exist, as zarr-python's
      `LocalStore` does. A key that names a directory reads as `{:error, :not_found}`;
      deleting it is a no-op (zarr-python would remove the whole subtree).

  Concurrent writers (several OS processes on one machine):
    * Every write renames its temporary file into place holding a `flock` on the key's
      folder. A conditional write (`put_if/4`, what `ExZarr.Storage.update/4` uses) checks,
      under that lock, that the target is still the generation it was read at (or still
      absent) and only then renames: for every writer of the machine, the check and the rename
      are one step, and a read-modify-write whose value changed meanwhile is refused and
      redone, never stored over the other writer's value. A conditional delete
      (`delete_if/3`: a partial write that leaves a chunk all fill) checks and unlinks under
      the same lock.
    * The lock is held for the check and the rename only (microseconds; the kernel already
      serializes renames within a folder), never while data is written or while a caller
      computes, and the kernel drops it when its process dies: no lock files, no stale locks
      to recover. A lock per key held for the whole read-modify-write would need both, and
      would make the filesystem the one store whose protocol differs from the object stores'
      (`If-Match` on a generation).
    * NFS: Linux takes `flock` on an NFS folder locally, so writers on one client machine are
      kept apart as on a local disk, but writers on different machines are not (and each
      client's attribute cache can hide another machine's rename for seconds). For writers on
      several machines use an object store (S3, GCS, Azure). Where a filesystem refuses the
      lock, conditional writes answer `{:error, {:conditional_writes_unsupported,
      {:no_folder_lock, folder}}}` and plain writes go on without it.

      {:ok, store} = ExZarr.Storage.new(:filesystem, path: "/tmp/example.zarr")
      :ok = ExZarr.Storage.put(store, "c/0/0", <<1, 2, 3>>)
      {:ok, <<3>>} = ExZarr.Storage.get(store, "c/0/0", {:suffix, 1})
  """
  @behaviour ExZarr.Storage

  require Record
  Record.defrecordp(:file_info, Record.extract(:file_info, from_lib: "kernel/include/file.hrl"))

  alias ExZarr.Native
  alias ExZarr.Storage.Filesystem.TempFiles

  @enforce_keys [:root]
  defstruct [:root, fsync: false, check_symlinks: true]

  @type t :: %__MODULE__{root: String.t(), fsync: boolean(), check_symlinks: boolean()}

  @max_links 40

  @impl true
  def options, do: [:path, :fsync, :check_symlinks]

  @impl true
  def init(opts) do
    with {:ok, path} <- local_path(Keyword.get(opts, :path), ["file"]),
         {:ok, fsync} <- ExZarr.Storage.boolean_option(opts, :fsync, false),
         {:ok, check?} <- ExZarr.Storage.boolean_option(opts, :check_symlinks, true) do
      {:ok,
       %__MODULE__{
         root: resolve_links(Path.expand(path)),
         fsync: fsync,
         check_symlinks: check?
       }}
    end
  end

  @doc """
  The local path that a `:path` option names: a plain path, or a URL of one of `schemes`
  (`"file:///data/a.zarr"`; no host but `localhost`). Any other `scheme://` is
  `{:error, {:unsupported_url_scheme, scheme}}`, never a relative path.
  """
  @spec local_path(term(), [String.t()]) :: {:ok, String.t()} | {:error, term()}
  def local_path(path, schemes) when is_binary(path) and path != "" do
    case ExZarr.Storage.url_scheme(path) do
      nil -> {:ok, path}
      scheme -> if scheme in schemes, do: url_path(path), else: unsupported(scheme)
    end
  end

  def local_path(nil, _schemes), do: {:error, {:missing_option, :path}}
  def local_path(path, _schemes), do: {:error, {:invalid_path, path}}

  defp url_path(url) do
    case URI.parse(url) do
      %URI{host: host, path: path, query: nil, fragment: nil}
      when host in [nil, "", "localhost"] and is_binary(path) and path != "" ->
        {:ok, URI.decode(path)}

      _ ->
        {:error, {:invalid_path, url}}
    end
  end

  defp unsupported(scheme), do: {:error, {:unsupported_url_scheme, scheme}}

  @impl true
  def get(%__MODULE__{} = state, key, range), do: read(state, key, range)

  @impl true
  def get_ranges(%__MODULE__{} = state, key, ranges), do: read(state, key, ranges)

  @doc """
  Ranges of a file and its generation, `{size, mtime, ctime, inode, device, inode
  generation}`, taken from the descriptor the bytes were read from (see
  `ExZarr.Native.read_file/5`). ExZarr's writes replace the file (a new inode) and set its
  modification time from the clock at nanosecond precision, so two files it wrote in turn
  never share a generation, even where inode numbers are reused at once and the filesystem
  keeps no inode generations (tmpfs). A program that rewrites a file in place is seen by its
  times, which a filesystem with coarse timestamps (kernels before 6.13) may not tell apart
  within one clock tick when the size is unchanged.
  """
  @impl true
  def get_ranges_with_generation(%__MODULE__{} = state, key, ranges, _expected),
    do: read(state, key, ranges, true)

  @doc "The file's path below the root (symlinks in the root resolved when opened)."
  @impl true
  # (the root is absolute with no trailing `/` but for `/` itself, and a valid key has no
  # leading or doubled `/`: a concatenation is the path Path.join/2 would give, in 0.014 us
  # against 0.27; reads through a chunk cache ask it twice for every chunk)
  def identity(%__MODULE__{root: "/"}, key), do: {__MODULE__, "/" <> key}
  def identity(%__MODULE__{root: root}, key), do: {__MODULE__, root <> "/" <> key}

  # Open, size, read (one range, or a list of them) and close in one native call on a dirty
  # I/O scheduler. With the symlink check on, no segment of the key may be a symlink there
  # (`O_NOFOLLOW`): a key that goes through one takes the path that checks where links lead.
  defp read(%__MODULE__{root: root, check_symlinks: check?} = state, key, ranges, gen? \\ false) do
    with :ok <- valid_key(key) do
      case Native.read_file(root, key, clamp(ranges), check?, gen?) do
        {:error, :symlink} -> get_through_links(state, key, ranges, gen?)
        {:error, reason} -> read_error(reason, Path.join(root, key))
        ok -> ok
      end
    end
  end

  defp get_through_links(state, key, range, gen?) do
    with {:ok, "/" <> relative = path} <- path_for(state, key) do
      case Native.read_file("/", relative, clamp(range), false, gen?) do
        {:error, reason} -> read_error(reason, path)
        ok -> ok
      end
    end
  end

  # No file is larger than this; bigger offsets and lengths mean the same.
  @max_file_size 0x7FFFFFFFFFFFFFFF

  defp clamp(nil), do: nil
  defp clamp(ranges) when is_list(ranges), do: Enum.map(ranges, &clamp/1)
  defp clamp({:suffix, n}), do: {:suffix, min(n, @max_file_size)}
  defp clamp({offset, length}), do: {min(offset, @max_file_size), min(length, @max_file_size)}

  defp read_error(reason, _path) when reason in [:enoent, :enotdir, :eisdir],
    do: {:error, :not_found}

  defp read_error(reason, path), do: {:error, {:file_error, reason, path}}

  # Directories, temporary file, vectored write and rename in one native call on a dirty I/O
  # scheduler. As for reads, a key that goes through a symlink takes the path that checks
  # where links lead.
  @impl true
  def put(%__MODULE__{} = state, key, value) do
    with :ok <- valid_key(key), {:ok, data} <- iovec(value) do
      at_key(state, key, &Native.write_file(&1, &2, data, &3, state.fsync), &write_result/2)
    end
  end

  # `native.(root, key, nofollow)`, its result and the file's path given to `finish`. A key
  # that goes through a symlink runs again from "/" on the path `path_for/2` checked.
  defp at_key(%__MODULE__{root: root, check_symlinks: check?} = state, key, native, finish) do
    case native.(root, key, check?) do
      {:error, :symlink} ->
        with {:ok, "/" <> relative = path} <- path_for(state, key),
             do: finish.(native.("/", relative, false), path)

      result ->
        finish.(result, Path.join(root, key))
    end
  end

  @doc """
  A conditional write (see "Concurrent writers" above): the new value goes to a temporary
  file as for `put/3`; then, holding a `flock` on the key's folder, the target is checked
  against `condition` and the temporary file renamed over it. The new file's generation is
  taken from the file itself, so it equals what a read of it gives.
  """
  @impl true
  def put_if(%__MODULE__{} = state, key, value, condition) do
    with :ok <- valid_key(key), {:ok, data} <- iovec(value) do
      if file_condition?(condition) do
        write = &Native.write_file(&1, &2, data, &3, state.fsync, condition)
        at_key(state, key, write, &write_result/2)
      else
        {:error, :generation_mismatch}
      end
    end
  end

  # A generation of this backend: six integers as the NIF makes them (a read of a file that
  # changed while it was read has a reference instead, which matches nothing).
  @u64 0..0xFFFFFFFFFFFFFFFF
  @i64 -0x8000000000000000..0x7FFFFFFFFFFFFFFF

  defp file_condition?(condition) when condition in [:any, :absent], do: true

  defp file_condition?({size, mtime, ctime, inode, device, igen})
       when size in @u64 and mtime in @i64 and ctime in @i64 and inode in @u64 and
              device in @u64 and igen in 0..0xFFFFFFFF,
       do: true

  defp file_condition?(_other), do: false

  defp write_result(:ok, _path), do: :ok
  defp write_result({:ok, generation}, _path), do: {:ok, generation}
  defp write_result({:error, :generation_mismatch} = mismatch, _path), do: mismatch

  defp write_result({:error, :nolock}, path),
    do: {:error, {:conditional_writes_unsupported, {:no_folder_lock, Path.dirname(path)}}}

  defp write_result({:error, reason}, path), do: {:error, {:file_error, reason, path}}

  @doc """
  Deletes the file only while it has `generation`: checked and unlinked holding the `flock`
  of the key's folder that every write takes to rename (see "Concurrent writers"), so no
  write of another OS process on the machine lands between the check and the unlink.
  """
  @impl true
  def delete_if(%__MODULE__{} = state, key, generation) do
    with :ok <- valid_key(key) do
      if is_tuple(generation) and file_condition?(generation),
        do: at_key(state, key, &Native.delete_file(&1, &2, &3, generation), &delete_result/2),
        else: {:error, :generation_mismatch}
    end
  end

  defp delete_result(:ok, path), do: TempFiles.sweep_stale_once(Path.dirname(path))

  defp delete_result({:error, _} = error, path), do: write_result(error, path)

  # A binary as it is; other iodata as a flat list of binaries (large ones not copied).
  defp iovec(value) when is_binary(value), do: {:ok, value}

  defp iovec(value) when is_list(value) do
    {:ok, :erlang.iolist_to_iovec(value)}
  rescue
    ArgumentError -> {:error, {:invalid_value, :not_iodata}}
  end

  defp iovec(_value), do: {:error, {:invalid_value, :not_iodata}}

  # Stale temporary files in the key's folder go too (see TempFiles), at most one folder read
  # per folder and minute however many keys of it are deleted.
  @impl true
  def delete(state, key) do
    with {:ok, path} <- path_for(state, key),
         :ok <- delete_file(path) do
      TempFiles.sweep_stale_once(Path.dirname(path))
    end
  end

  defp delete_file(path) do
    case :file.delete(path, [:raw]) do
      :ok ->
        :ok

      {:error, reason} when reason in [:enoent, :enotdir] ->
        :ok

      {:error, reason} ->
        if File.dir?(path), do: :ok, else: {:error, {:file_error, reason, path}}
    end
  end

  @doc """
  Deletes the folder of `prefix` (the root's contents for `""`): every value, every
  temporary file of a write (`.<name>.tmp.<hex>`, whatever its age) and the folders left
  empty. Symlinks are removed only when they count as values (see `list/2`); what they point
  to is never touched, and a folder that keeps something is kept.
  """
  @impl true
  def delete_prefix(state, prefix) do
    start = if prefix == "", do: {:ok, state.root}, else: path_for(state, prefix)

    with {:ok, dir} <- start, :ok <- delete_below(state, dir) do
      if prefix != "", do: :file.del_dir(dir)
      :ok
    end
  end

  defp delete_below(state, dir) do
    with {:ok, names} <- names(dir) do
      ExZarr.Result.each_ok(names, fn name ->
        path = Path.join(dir, name)

        case entry(state, path, name) do
          :directory -> with :ok <- delete_below(state, path), do: del_dir(path)
          :skip -> :ok
          _file_or_temp -> delete_file(path)
        end
      end)
    end
  end

  # A folder that still holds something (a symlink kept, a file written meanwhile) stays.
  defp del_dir(path) do
    _ = :file.del_dir(path)
    :ok
  end

  @doc """
  Removes the temporary files that interrupted writes left in a store (`.<name>.tmp.<hex>`,
  see `ExZarr.Storage.Filesystem.TempFiles`), below `path`: the store's root, any folder in
  it, a `"file://"` URL or an open filesystem store. Symlinks are not followed.

  Option `:older_than` - seconds since the file last changed (default 60, enough for a write
  in progress to have touched it). `0` removes every temporary file, also those of writes
  still running (they then fail): use it only when nothing writes to the store.

      {:ok, removed} = ExZarr.Storage.Filesystem.sweep_temp_files("/data/a.zarr", older_than: 3600)
  """
  @spec sweep_temp_files(String.t() | ExZarr.Storage.t() | t(), keyword()) ::
          {:ok, non_neg_integer()} | {:error, term()}
  def sweep_temp_files(path, opts \\ [])

  def sweep_temp_files(%ExZarr.Storage{module: __MODULE__, state: state}, opts),
    do: sweep_temp_files(state, opts)

  def sweep_temp_files(%__MODULE__{root: root}, opts), do: sweep_temp_files(root, opts)

  def sweep_temp_files(path, opts) do
    with :ok <- sweep_options(opts),
         {:ok, dir} <- local_path(path, ["file"]) do
      TempFiles.sweep(Path.expand(dir), Keyword.get(opts, :older_than, TempFiles.stale_after()))
    end
  end

  defp sweep_options(opts) do
    cond do
      not Keyword.keyword?(opts) -> {:error, {:invalid_options, opts}}
      (name = Enum.find(Keyword.keys(opts), &(&1 != :older_than))) != nil -> unknown(name)
      true -> older_than(Keyword.get(opts, :older_than, 0))
    end
  end

  defp unknown(name), do: {:error, {:unknown_option, name}}

  defp older_than(seconds) when is_integer(seconds) and seconds >= 0, do: :ok
  defp older_than(seconds), do: {:error, {:invalid_option, :older_than, seconds}}

  @impl true
  def list(state, prefix) do
    dir = String.trim_trailing(prefix, "/")
    start = if dir == "", do: {:ok, state.root}, else: path_for(state, dir)

    with {:ok, path} <- start, {:ok, keys} <- walk(state, path, dir, []) do
      {:ok, Enum.sort(keys)}
    end
  end

  @impl true
  def list_dir(state, prefix) do
    start = if prefix == "", do: {:ok, state.root}, else: path_for(state, prefix)

    with {:ok, path} <- start do
      with {:ok, names} <- names(path) do
        grouped = Enum.group_by(names, &entry(state, Path.join(path, &1), &1))

        {:ok,
         %{
           keys: Enum.sort(Map.get(grouped, :file, [])),
           prefixes: Enum.sort(Map.get(grouped, :directory, []))
         }}
      end
    end
  end

  defp walk(state, path, key_prefix, acc) do
    with {:ok, names} <- names(path) do
      Enum.reduce_while(names, {:ok, acc}, fn name, {:ok, acc} ->
        key = if key_prefix == "", do: name, else: key_prefix <> "/" <> name

        case entry(state, Path.join(path, name), name) do
          :file -> {:cont, {:ok, [key | acc]}}
          :directory -> {:cont, walk(state, Path.join(path, name), key, acc)}
          _temp_or_skip -> {:cont, {:ok, acc}}
        end
        |> halt_on_error()
      end)
    end
  end

  @doc "The names in a folder, as strings; none when it is missing or not a folder."
  @spec names(String.t()) :: {:ok, [String.t()]} | {:error, {:file_error, atom(), String.t()}}
  def names(dir) do
    case :file.list_dir(dir) do
      {:ok, names} -> {:ok, Enum.map(names, &List.to_string/1)}
      {:error, reason} when reason in [:enoent, :enotdir] -> {:ok, []}
      {:error, reason} -> {:error, {:file_error, reason, dir}}
    end
  end

  defp halt_on_error({:cont, {:error, _} = error}), do: {:halt, error}
  defp halt_on_error(other), do: other

  defp entry(state, path, name) do
    case :file.read_link_info(path, [:raw]) do
      {:ok, file_info(type: :regular)} ->
        if TempFiles.temp_name?(name), do: :temp, else: :file

      {:ok, file_info(type: :directory)} ->
        :directory

      # A symlink counts as a value when it points at a file inside the root; linked
      # directories are not descended into (they could form cycles).
      {:ok, file_info(type: :symlink)} ->
        target = resolve_links(path)

        if inside?(target, state.root) and File.regular?(target), do: :file, else: :skip

      _ ->
        :skip
    end
  end

  @doc "The file's size, from its inode (symlinks checked as for reads)."
  @impl true
  def size(state, key) do
    with :ok <- valid_key(key), {:ok, path} <- path_for(state, key) do
      case :file.read_file_info(path, [:raw]) do
        {:ok, file_info(type: :regular, size: size)} -> {:ok, size}
        {:ok, _directory_or_other} -> {:error, :not_found}
        {:error, reason} -> read_error(reason, path)
      end
    end
  end

  @impl true
  def describe(%__MODULE__{root: root}), do: "file://" <> root

  @impl true
  def supports_ranges?(_state), do: true

  # The absolute path of a key, after checking that the key is well formed and that no
  # symlink on the way leads outside the root.
  defp path_for(%__MODULE__{root: root, check_symlinks: check?}, key) do
    with :ok <- valid_key(key),
         :ok <- if(check?, do: check_links(root, String.split(key, "/"), root), else: :ok) do
      {:ok, Path.join(root, key)}
    else
      _ -> {:error, {:invalid_key, key}}
    end
  end

  defp valid_key(key) do
    case ExZarr.Storage.validate_key(key) do
      :ok -> :ok
      _ -> {:error, {:invalid_key, key}}
    end
  end

  defp check_links(_dir, [], _root), do: :ok

  defp check_links(dir, [segment | rest], root) do
    path = Path.join(dir, segment)

    case :file.read_link_info(path, [:raw]) do
      {:ok, file_info(type: :symlink)} ->
        target = resolve_links(path)
        if inside?(target, root), do: check_links(target, rest, root), else: :error

      {:ok, _} ->
        check_links(path, rest, root)

      {:error, _} ->
        :ok
    end
  end

  defp inside?(path, root), do: path == root or String.starts_with?(path, root <> "/")

  # Follows every symlink in an absolute path (like realpath(3)); parts that do not exist
  # are kept as written. Gives up after @max_links links and returns the path reached.
  defp resolve_links(path) do
    ["/" | parts] = Path.split(path)
    resolve_links("/", parts, @max_links)
  end

  defp resolve_links(dir, [], _budget), do: dir
  defp resolve_links(dir, parts, 0), do: Path.join([dir | parts])

  defp resolve_links(dir, [part | rest], budget) do
    path = Path.join(dir, part)

    with {:ok, file_info(type: :symlink)} <- :file.read_link_info(path, [:raw]),
         {:ok, target} <- :file.read_link_all(path) do
      target = Path.expand(IO.chardata_to_string(target), dir)
      ["/" | target_parts] = Path.split(target)
      resolve_links("/", target_parts ++ rest, budget - 1)
    else
      _ -> resolve_links(path, rest, budget)
    end
  end
end
