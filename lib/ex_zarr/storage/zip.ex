defmodule ExZarr.Storage.Zip do
  @moduledoc """
  A Zarr store in a single ZIP file (`storage: :zip`), compatible both ways with zarr-python's
  `ZipStore`: members are named by their keys and written uncompressed.

  Options:
    * `:path` (required) - the `.zip` file, or a `"zip://"` or `"file://"` URL
      (`"zip:///data/a.zip"`).
    * `:mode` - `:read` (default; the archive must exist), `:write` (a new archive, replacing
      any file at `path` when it is closed) or `:append` (adds to an existing archive, or
      starts a new one).
    * `:owner` - a pid; when it exits the archive is finalized and closed.

  Reading: the central directory is read once, into an ETS index shared by all readers.
  Each read opens the file in the caller's process and reads only the member's bytes; a
  ranged read of an uncompressed member reads only the range. Deflated members (written by
  other tools) are read too. Whole reads check the member's CRC-32.

  Writing: members are appended as they are put (values are not kept in memory), and the
  central directory is written by `close/1`. Until then the archive is not a valid ZIP file:
  in `:write` mode it lives in a hidden temporary file next to `path` and replaces `path` only
  when closed; in `:append` mode the new members overwrite the old central directory in place
  (as Python's `zipfile` does), so a crash before closing leaves the archive unreadable.
  Overwriting a key appends a new member and the directory lists only the newest one;
  deleting a key drops it from the directory. The bytes of replaced members stay in the file.
  The archive is also finalized if its owner exits or the application stops.

  One writer: an archive open for writing (`:write` or `:append`) is locked, with the lock
  file `.<name>.lock` next to it, until it is closed; opening it for writing again, in this or
  another OS process on the machine, is `{:error, {:locked, path}}` (a crashed writer's lock
  is released by the kernel). Its one writer process appends every member, so conditional
  puts (`put_if/4`) compare and write in one step.

      {:ok, store} = ExZarr.Storage.new(ExZarr.Storage.Zip, path: "/tmp/a.zip", mode: :write)
      :ok = ExZarr.Storage.put(store, "zarr.json", "{}")
      :ok = ExZarr.Storage.Zip.close(store.state)
      {:ok, store} = ExZarr.Storage.new(ExZarr.Storage.Zip, path: "/tmp/a.zip")
      {:ok, "{}"} = ExZarr.Storage.get(store, "zarr.json")
  """
  @behaviour ExZarr.Storage

  alias ExZarr.Storage.{Filesystem, Range}
  alias ExZarr.Storage.Zip.{Format, Server}

  @supervisor ExZarr.Storage.Supervisor
  @modes [:read, :write, :append]

  @enforce_keys [:server, :index, :file, :path, :mode]
  defstruct [:server, :index, :file, :path, :mode]

  @type t :: %__MODULE__{
          server: pid(),
          index: :ets.tid(),
          file: String.t(),
          path: String.t(),
          mode: :read | :write | :append
        }

  @impl true
  def options, do: [:path, :mode, :owner]

  @impl true
  def init(opts) do
    with {:ok, path} <- Filesystem.local_path(Keyword.get(opts, :path), ["zip", "file"]),
         {:ok, mode} <- mode(Keyword.get(opts, :mode, :read)),
         {:ok, owner} <- owner(Keyword.get(opts, :owner)),
         path = Path.expand(path),
         {:ok, server} <- start_server(path, mode, owner) do
      %{index: index, file: file} = Server.info(server)
      {:ok, %__MODULE__{server: server, index: index, file: file, path: path, mode: mode}}
    end
  end

  defp mode(mode) when mode in @modes, do: {:ok, mode}
  defp mode(mode), do: {:error, {:invalid_option, :mode, mode}}

  defp owner(owner) when is_nil(owner) or is_pid(owner), do: {:ok, owner}
  defp owner(other), do: {:error, {:invalid_option, :owner, other}}

  defp start_server(path, mode, owner) do
    case DynamicSupervisor.start_child(@supervisor, {Server, {path, mode, owner}}) do
      {:ok, pid} -> {:ok, pid}
      {:error, reason} -> {:error, reason}
    end
  catch
    :exit, _ -> {:error, {:no_supervisor, @supervisor}}
  end

  @impl true
  def get(%__MODULE__{} = zip, key, range) do
    case lookup(zip.index, key) do
      {:ok, entry} -> read_entry(zip, entry, range)
      :error -> {:error, :not_found}
      :closed -> {:error, {:closed, zip.path}}
    end
  end

  defp lookup(index, key) do
    case :ets.lookup(index, key) do
      [{_, entry}] -> {:ok, entry}
      [] -> :error
    end
  rescue
    ArgumentError -> :closed
  end

  # A member whose directory entry does not fit the archive (see `ExZarr.Storage.Zip.Server`).
  defp read_entry(_zip, %{damaged: true} = entry, _range),
    do: {:error, {:bad_zip_member, entry.name, :damaged_entry}}

  defp read_entry(zip, entry, range) do
    case :file.open(zip.file, [:raw, :read, :binary]) do
      {:ok, fd} ->
        try do
          with {:ok, data_offset} <- data_offset(zip, fd, entry) do
            read_data(fd, data_offset, entry, range)
          end
        after
          :file.close(fd)
        end
        |> case do
          {:error, reason} when is_atom(reason) -> {:error, {:bad_zip_member, entry.name, reason}}
          other -> other
        end

      {:error, reason} ->
        {:error, {:file_error, reason, zip.file}}
    end
  end

  defp data_offset(zip, fd, entry) do
    case :ets.lookup(zip.index, entry.offset) do
      [{_, data_offset}] ->
        {:ok, data_offset}

      [] ->
        with {:ok, header} <- pread(fd, entry.offset, Format.local_header_size()),
             {:ok, tail} <- Format.local_header_tail(header) do
          data_offset = entry.offset + Format.local_header_size() + tail
          :ets.insert(zip.index, {entry.offset, data_offset})
          {:ok, data_offset}
        end
    end
  end

  defp read_data(_fd, _offset, %{flags: flags}, _range) when Bitwise.band(flags, 1) == 1,
    do: {:error, :encrypted}

  # Several ranges of a stored member: one open, one read each. A deflated member is
  # inflated once and sliced.
  defp read_data(fd, offset, %{method: 0} = entry, ranges) when is_list(ranges),
    do: ExZarr.Result.map_ok(ranges, &read_data(fd, offset, entry, &1))

  defp read_data(fd, offset, %{method: 0} = entry, nil) do
    with {:ok, data} <- pread(fd, offset, entry.size), do: check_crc(data, entry)
  end

  defp read_data(fd, offset, %{method: 0} = entry, range) do
    {start, length} = Range.resolve(range, entry.size)
    pread(fd, offset + start, length)
  end

  defp read_data(fd, offset, %{method: 8} = entry, range) do
    with {:ok, compressed} <- pread(fd, offset, entry.compressed_size),
         {:ok, data} <- inflate(compressed, entry.size),
         {:ok, data} <- check_crc(data, entry) do
      {:ok, Range.slice(data, range)}
    end
  end

  defp read_data(_fd, _offset, _entry, _range), do: {:error, :unsupported_compression}

  defp pread(_fd, _offset, 0), do: {:ok, <<>>}

  defp pread(fd, offset, length) do
    case :file.pread(fd, offset, length) do
      {:ok, data} when byte_size(data) == length -> {:ok, data}
      {:ok, _short} -> {:error, :truncated}
      :eof -> {:error, :truncated}
      {:error, reason} -> {:error, reason}
    end
  end

  defp check_crc(data, entry) do
    if :erlang.crc32(data) == entry.crc, do: {:ok, data}, else: {:error, :crc_mismatch}
  end

  # Raw deflate, never producing more than the size the directory promises.
  defp inflate(compressed, size) do
    z = :zlib.open()

    try do
      :ok = :zlib.inflateInit(z, -15)
      inflate_loop(z, :zlib.safeInflate(z, compressed), [], 0, size)
    catch
      :error, _ -> {:error, :bad_deflate_data}
    after
      :zlib.close(z)
    end
  end

  defp inflate_loop(z, {status, out}, acc, total, size) do
    total = total + IO.iodata_length(out)

    cond do
      total > size -> {:error, :size_mismatch}
      status == :continue -> inflate_loop(z, :zlib.safeInflate(z, []), [acc | out], total, size)
      total == size -> {:ok, IO.iodata_to_binary([acc | out])}
      true -> {:error, :size_mismatch}
    end
  end

  @doc "Several ranges of one member, read with one open of the archive."
  @impl true
  def get_ranges(%__MODULE__{} = zip, key, ranges), do: get(zip, key, ranges)

  @doc """
  Several ranges of one member and its generation: where the member's entry starts in the
  archive, its checksum and size (a rewritten member is a new entry further on).
  """
  @impl true
  def get_ranges_with_generation(%__MODULE__{} = zip, key, ranges, _expected) do
    case lookup(zip.index, key) do
      {:ok, entry} ->
        with {:ok, parts} <- read_entry(zip, entry, ranges),
             do: {:ok, parts, Server.generation(entry)}

      :error ->
        {:error, :not_found}

      :closed ->
        {:error, {:closed, zip.path}}
    end
  end

  @doc "The archive's path and the member's name."
  @impl true
  def identity(%__MODULE__{path: path}, key), do: {__MODULE__, path, key}

  @impl true
  def put(%__MODULE__{} = zip, key, value) do
    with {:ok, _generation} <- put_if(zip, key, value, :any), do: :ok
  end

  @doc """
  A put on a condition, checked by the archive's one writer process (see the module doc), so
  it holds for every writer of the archive.
  """
  @impl true
  def put_if(%__MODULE__{mode: :read, path: path}, _key, _value, _condition),
    do: {:error, {:read_only, path}}

  def put_if(%__MODULE__{} = zip, key, value, condition) do
    case checksum(value) do
      {:ok, crc, size} ->
        call(zip, fn -> Server.put(zip.server, key, value, crc, size, condition) end)

      error ->
        error
    end
  end

  defp checksum(value) do
    {:ok, :erlang.crc32(value), IO.iodata_length(value)}
  rescue
    ArgumentError -> {:error, {:invalid_value, :not_iodata}}
  end

  defp call(zip, fun) do
    fun.()
  catch
    :exit, _ -> {:error, {:closed, zip.path}}
  end

  @impl true
  def delete(%__MODULE__{mode: :read, path: path}, _key), do: {:error, {:read_only, path}}
  def delete(%__MODULE__{} = zip, key), do: call(zip, fn -> Server.delete(zip.server, key) end)

  @doc "A delete on the member's generation, checked by the archive's one writer process."
  @impl true
  def delete_if(%__MODULE__{mode: :read, path: path}, _key, _generation),
    do: {:error, {:read_only, path}}

  def delete_if(%__MODULE__{}, _key, condition) when condition in [:any, :absent],
    do: {:error, :generation_mismatch}

  def delete_if(%__MODULE__{} = zip, key, generation),
    do: call(zip, fn -> Server.delete(zip.server, key, generation) end)

  @impl true
  def list(%__MODULE__{} = zip, prefix) do
    names = :ets.select(zip.index, [{{:"$1", :_}, [{:is_binary, :"$1"}], [:"$1"]}])
    {:ok, ExZarr.Storage.Keys.under(names, prefix)}
  rescue
    ArgumentError -> {:error, {:closed, zip.path}}
  end

  @impl true
  def describe(%__MODULE__{path: path}), do: "zip://" <> path

  @impl true
  def supports_ranges?(_zip), do: true

  @doc """
  Finalizes and closes the archive: writes the central directory of a writable archive (and,
  in `:write` mode, moves it to its path). Afterwards the store answers `{:error, {:closed,
  path}}`. Closing twice is `:ok`.
  """
  @impl true
  @spec close(t()) :: :ok | {:error, term()}
  def close(%__MODULE__{} = zip) do
    Server.close(zip.server)
  catch
    :exit, _ -> :ok
  end
end
