defmodule ExZarr.Storage.Zip.Server do
  @moduledoc false
  # The process behind one open `ExZarr.Storage.Zip`: it owns the archive's index (a public ETS
  # table that readers use directly) and, when the archive is writable, the file handle that
  # entries are appended through, one at a time, and the central directory written at close.
  #
  # Index rows: `{name, entry}` for every member (see `ExZarr.Storage.Zip.Format.entry/0`), and
  # `{local_header_offset, data_offset}` once a member's data offset is known.
  #
  # The process traps exits, so a writable archive is also finalized when the application shuts
  # down or its owner exits, not only on `ExZarr.Storage.Zip.close/1`.
  #
  # A writable archive has one writer: this process holds the lock file `.<name>.lock` next to
  # the archive (`ExZarr.Native.lock_file/1`) until it closes, and a second writer of the same
  # path, in this or any other OS process of the machine, is refused with `{:locked, path}`.
  use GenServer, restart: :temporary

  alias ExZarr.Storage.Zip.Format

  # Enough to hold the end record with the longest comment, the ZIP64 locator and record.
  @tail_size 65_557 + 20 + 56

  @doc false
  @spec start_link({String.t(), :read | :write | :append, pid() | nil}) :: GenServer.on_start()
  def start_link(args), do: GenServer.start_link(__MODULE__, args)

  @doc "The index table and the file readers open."
  @spec info(pid()) :: %{index: :ets.tid(), file: String.t()}
  def info(server), do: GenServer.call(server, :info)

  @doc """
  Appends a member if the current one is what `condition` says (`:any`, `:absent`, or the
  generation `{offset, crc, size}` of the member now in the index); returns the new member's
  generation. The caller has computed the CRC-32 and size of `value`.
  """
  @spec put(pid(), String.t(), iodata(), non_neg_integer(), non_neg_integer(), term()) ::
          {:ok, tuple()} | {:error, term()}
  def put(server, name, value, crc, size, condition),
    do: GenServer.call(server, {:put, name, value, crc, size, condition}, :infinity)

  @doc "A member's generation: where its entry starts, its checksum and its size."
  @spec generation(map()) :: {non_neg_integer(), non_neg_integer(), non_neg_integer()}
  def generation(entry), do: {entry.offset, entry.crc, entry.size}

  @doc """
  Drops a member from the index (its bytes stay in the file until it is rewritten), if it is
  what `condition` says (`:any`, or the generation of the member now in the index).
  """
  @spec delete(pid(), String.t(), term()) :: :ok | {:error, term()}
  def delete(server, name, condition \\ :any),
    do: GenServer.call(server, {:delete, name, condition})

  @doc "Writes the central directory (if writable), closes the file and stops."
  @spec close(pid()) :: :ok | {:error, term()}
  def close(server), do: GenServer.call(server, :close, :infinity)

  @impl true
  def init({path, mode, owner}) do
    Process.flag(:trap_exit, true)
    if owner, do: Process.monitor(owner)
    index = :ets.new(:ex_zarr_zip, [:set, :public, read_concurrency: true])
    state = %{path: path, mode: mode, index: index, fd: nil, file: path, pos: 0, lock: nil}

    with {:ok, state} <- lock(state), {:ok, state} <- open(state) do
      {:ok, state}
    else
      {:error, reason} -> {:stop, reason}
    end
  end

  defp lock(%{mode: :read} = state), do: {:ok, state}

  defp lock(state) do
    path = Path.join(Path.dirname(state.path), "." <> Path.basename(state.path) <> ".lock")

    with :ok <- mkdir(Path.dirname(path)) do
      case ExZarr.Native.lock_file(path) do
        {:ok, lock} -> {:ok, %{state | lock: lock}}
        {:error, :locked} -> {:error, {:locked, state.path}}
        {:error, reason} -> {:error, {:file_error, reason, path}}
      end
    end
  end

  defp open(%{mode: :read} = state) do
    with {:ok, _cd_offset} <- load(state), do: {:ok, state}
  end

  defp open(%{mode: :append} = state) do
    case File.exists?(state.path) do
      true ->
        with {:ok, cd_offset} <- load(state),
             {:ok, fd} <- open_file(state.path, [:read, :write]) do
          {:ok, %{state | fd: fd, pos: cd_offset}}
        end

      false ->
        open(%{state | mode: :write})
    end
  end

  # A new archive is written to a hidden file next to the target and renamed over it when
  # it is closed, so the target is never a half-written archive.
  defp open(%{mode: :write} = state) do
    dir = Path.dirname(state.path)
    random = Base.encode16(:crypto.strong_rand_bytes(8), case: :lower)
    temp = Path.join(dir, "." <> Path.basename(state.path) <> ".tmp." <> random)

    with :ok <- mkdir(dir), {:ok, fd} <- open_file(temp, [:write, :exclusive]) do
      {:ok, %{state | fd: fd, file: temp}}
    end
  end

  defp mkdir(dir) do
    case File.mkdir_p(dir) do
      :ok -> :ok
      {:error, reason} -> {:error, {:file_error, reason, dir}}
    end
  end

  defp open_file(path, modes) do
    case :file.open(path, [:raw, :binary | modes]) do
      {:ok, fd} -> {:ok, fd}
      {:error, reason} -> {:error, {:file_error, reason, path}}
    end
  end

  # Reads the central directory into the index; returns where it starts.
  defp load(state) do
    with {:ok, fd} <- open_file(state.path, [:read]) do
      try do
        with {:ok, directory} <- read_directory(fd),
             {:ok, binary} <- pread(fd, directory.offset, directory.size),
             {:ok, entries} <- Format.parse_directory(binary) do
          named = Enum.filter(entries, &(ExZarr.Storage.validate_key(&1.name) == :ok))
          :ets.insert(state.index, Enum.map(named, &{&1.name, checked(&1, directory.offset)}))
          {:ok, directory.offset}
        end
      after
        :file.close(fd)
      end
      |> case do
        {:error, reason} when is_atom(reason) -> {:error, {:bad_zip, reason, state.path}}
        other -> other
      end
    end
  end

  # The directory must lie inside the file: sizes from a damaged archive are never trusted
  # with an allocation.
  defp read_directory(fd) do
    with {:ok, size} <- :file.position(fd, :eof),
         tail_offset = max(size - @tail_size, 0),
         {:ok, tail} <- pread(fd, tail_offset, size - tail_offset),
         {:ok, directory} <- find_directory(fd, tail, tail_offset) do
      if directory.offset + directory.size <= size,
        do: {:ok, directory},
        else: {:error, :directory_outside_file}
    end
  end

  defp find_directory(fd, tail, tail_offset) do
    case Format.find_directory(tail, tail_offset) do
      {:need_zip64_record, offset} ->
        with {:ok, record} <- pread(fd, offset, 56), do: Format.parse_zip64_eocd(record)

      other ->
        other
    end
  end

  # A member is usable when its bytes lie before the central directory and its size is one
  # deflate could produce from them (at most 1032:1). Another is kept in the index marked
  # `damaged: true`, so that reading it is an error rather than a missing key (a chunk that
  # would read as fill values).
  defp checked(entry, cd_offset) do
    if entry.offset + Format.local_header_size() + entry.compressed_size <= cd_offset and
         (entry.method != 8 or entry.size <= entry.compressed_size * 1032 + 1024) and
         (entry.method != 0 or entry.size == entry.compressed_size),
       do: entry,
       else: Map.put(entry, :damaged, true)
  end

  defp pread(fd, offset, length) do
    case :file.pread(fd, offset, length) do
      {:ok, data} when byte_size(data) == length -> {:ok, data}
      {:ok, _short} -> {:error, :truncated}
      :eof when length == 0 -> {:ok, <<>>}
      :eof -> {:error, :truncated}
      {:error, reason} -> {:error, reason}
    end
  end

  @impl true
  def handle_call(:info, _from, state),
    do: {:reply, %{index: state.index, file: state.file}, state}

  def handle_call({:put, _, _, _, _, _}, _from, %{fd: nil} = state),
    do: {:reply, {:error, {:read_only, state.path}}, state}

  def handle_call({:put, name, value, crc, size, condition}, _from, state) do
    current =
      case :ets.lookup(state.index, name) do
        [{_, entry}] -> generation(entry)
        [] -> :absent
      end

    if condition in [:any, current],
      do: append(state, name, value, crc, size),
      else: {:reply, {:error, :generation_mismatch}, state}
  end

  def handle_call({:delete, _, _}, _from, %{fd: nil} = state),
    do: {:reply, {:error, {:read_only, state.path}}, state}

  def handle_call({:delete, name, condition}, _from, state) do
    case {condition, :ets.lookup(state.index, name)} do
      {:any, _} ->
        :ets.delete(state.index, name)
        {:reply, :ok, state}

      {generation, [{_, entry}]} when generation != :absent ->
        if generation(entry) == generation do
          :ets.delete(state.index, name)
          {:reply, :ok, state}
        else
          {:reply, {:error, :generation_mismatch}, state}
        end

      _missing ->
        {:reply, {:error, :generation_mismatch}, state}
    end
  end

  def handle_call(:close, _from, state) do
    {result, state} = finalize(state)
    {:stop, :normal, result, state}
  end

  defp append(state, name, value, crc, size) do
    entry = Format.new_entry(name, state.pos, crc, size)
    header = Format.local_header(entry)

    case :file.pwrite(state.fd, state.pos, [header, value]) do
      :ok ->
        data_offset = state.pos + byte_size(header)
        :ets.insert(state.index, [{name, entry}, {state.pos, data_offset}])
        {:reply, {:ok, generation(entry)}, %{state | pos: data_offset + size}}

      {:error, reason} ->
        {:reply, {:error, {:file_error, reason, state.file}}, state}
    end
  end

  @impl true
  def handle_info({:DOWN, _ref, :process, _pid, _reason}, state) do
    {_result, state} = finalize(state)
    {:stop, :normal, state}
  end

  @impl true
  def terminate(_reason, state), do: finalize(state)

  defp finalize(%{fd: nil} = state), do: {:ok, state}

  defp finalize(state) do
    entries =
      state.index
      |> :ets.select([{{:"$1", :"$2"}, [{:is_binary, :"$1"}], [:"$2"]}])
      |> Enum.sort_by(& &1.offset)

    directory = Format.directory(entries, state.pos)
    end_pos = state.pos + IO.iodata_length(directory)

    written =
      with :ok <- :file.pwrite(state.fd, state.pos, directory),
           {:ok, _} <- :file.position(state.fd, end_pos),
           do: :file.truncate(state.fd)

    closed = :file.close(state.fd)

    result =
      with :ok <- written, :ok <- closed, :ok <- rename(state.file, state.path) do
        :ok
      else
        {:error, reason} -> {:error, {:file_error, reason, state.path}}
      end

    if state.lock, do: ExZarr.Native.unlock_file(state.lock)
    {result, %{state | fd: nil, lock: nil}}
  end

  defp rename(same, same), do: :ok
  defp rename(from, to), do: :file.rename(from, to)
end
