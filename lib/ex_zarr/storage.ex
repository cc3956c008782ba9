defmodule ExZarr.Storage do
  @moduledoc """
  The storage behaviour and the handle the rest of ExZarr uses to talk to a backend.

  A backend stores opaque values under Zarr keys (`"zarr.json"`, `"c/0/1"`, `"a/b/.zarray"`).
  Every key is checked here with `validate_key/1` before it reaches a backend, so no key can
  leave the store's root; backends check again where they map keys to paths.

  Reads take an optional byte range: `{offset, length}` or `{:suffix, n}` (the last `n` bytes).

      iex> {:ok, store} = ExZarr.Storage.new(:memory, [])
      iex> ExZarr.Storage.put(store, "c/0", <<1, 2, 3>>)
      :ok
      iex> ExZarr.Storage.get(store, "c/0", {1, 2})
      {:ok, <<2, 3>>}
      iex> ExZarr.Storage.get(store, "c/1")
      {:error, :not_found}

  ## Generations

  A generation is an opaque term naming one version of a stored value: a rewrite of the value
  (by this node, another OS process or another machine) gives it a different generation.
  `get_ranges_with_generation/4` returns the generation the bytes were read from, and reads
  only from an expected one, so that several reads of one value (a shard's index, then the
  inner chunks it points at) can be proved to come from the same version. What each backend
  uses: the filesystem `{size, mtime, ctime, inode, device, inode generation}` from the
  descriptor the bytes are read from; S3 and Azure the `ETag`, GCS `x-goog-generation` of the
  response that carried the bytes (sent back as `If-Match` / `ifGenerationMatch`, so the
  server refuses a read of a newer version); memory and ETS a per-write counter; zip the
  member's offset and checksum; MongoDB GridFS the file's `_id`; Mnesia the value's SHA-256. A
  backend without generations (custom ones that do not implement
  `c:get_ranges_with_generation/4`) gives `nil`: unknown.

  `identity/2` names the object a key designates, the same for every handle that reaches it,
  so that writers on one node can serialize on it (`ExZarr.Storage.Lock`).

  ## Conditional writes

  `put_if/4` stores a value only if the key still holds the generation a read returned (or
  holds nothing, `:absent`), and returns the new value's generation; otherwise nothing is
  written and the answer is `{:error, :generation_mismatch}`. The check and the write are one
  step for every writer the backend's mechanism reaches, and `update/4` builds safe
  read-modify-writes on it (read, change, put on the generation read, retry on conflict):

      {:ok, :done, _generation} =
        ExZarr.Storage.update(store, "counter", fn
          nil -> {:write, "1", :done}
          n -> {:write, Integer.to_string(String.to_integer(n) + 1), :done}
        end)

  | backend | mechanism | writers kept apart |
  |---|---|---|
  | S3 | `If-Match` / `If-None-Match: *` on PUT and on CompleteMultipartUpload | all, anywhere |
  | GCS | `ifGenerationMatch` (0: absent) on uploads | all, anywhere |
  | Azure | `If-Match` / `If-None-Match: *` on Put Blob and Put Block List | all, anywhere |
  | filesystem | check and rename under a `flock` of the key's folder | OS processes of one machine |
  | memory, ETS | compare-and-swap (`:ets.select_replace/2`, `:ets.insert_new/2`) | the node |
  | Mnesia | a transaction comparing the value's SHA-256 | every node of the table |
  | MongoDB GridFS | the insert of the filename's next numbered commit (a unique `_id`) | all, anywhere |
  | zip | the archive's one writer process (a second writer is refused) | the machine |
  | HTTP | read-only | - |

  A conditional delete (`delete_if/3`, what `update/4` does for `{:delete, reply}`: a partial
  write that leaves a chunk all fill) removes a value only while it holds the generation read,
  in one step, with the same mechanism: `If-Match` on Delete Blob (Azure), `ifGenerationMatch`
  on DELETE (GCS), the folder's `flock` around the check and the unlink (filesystem),
  `:ets.select_delete/2` (memory, ETS), a transaction (Mnesia), the writer process (zip), a
  commit naming no version (GridFS). S3
  sends `If-Match` on DELETE only when opened with `conditional_deletes: true` (MinIO ignores
  it); `conditional_deletes?/1` tells, and without it `update/4` checks the generation just
  before an unconditional delete.

  `conditional_writes?/1` tells whether a store honours conditions; backends without
  `c:put_if/4` (custom ones) and S3 stores opened with `conditional_writes: false` (a server
  that ignores `If-Match`) do not, and `put_if/4` and `update/4` refuse with
  `{:error, {:conditional_writes_unsupported, backend}}`. `verify_conditional_writes/1` checks
  a store by experiment.
  """

  alias ExZarr.Telemetry

  @enforce_keys [:module, :state]
  defstruct [:module, :state]

  @type t :: %__MODULE__{module: module(), state: term()}
  @type key :: String.t()
  @type range :: nil | {non_neg_integer(), non_neg_integer()} | {:suffix, non_neg_integer()}

  @typedoc """
  One version of a stored value (see "Generations"): compare with `==` only; `nil` is unknown.
  """
  @type generation :: term()

  @typedoc """
  What `put_if/4` requires of the stored value: `:absent` (no value), a generation read from
  it (not `nil`), or `:any` (nothing: an ordinary put that returns the new generation).
  """
  @type condition :: :absent | :any | generation()

  @callback init(keyword()) :: {:ok, term()} | {:error, term()}
  @callback get(state :: term(), key(), range()) ::
              {:ok, binary()} | {:error, :not_found | term()}
  @callback put(state :: term(), key(), iodata()) :: :ok | {:error, term()}
  @callback delete(state :: term(), key()) :: :ok | {:error, term()}
  @doc "All keys under a prefix (\"\" for all), recursively, relative to the store root."
  @callback list(state :: term(), prefix :: String.t()) :: {:ok, [key()]} | {:error, term()}
  @doc """
  The direct children of a prefix: keys stored right under it and the names of the "folders"
  below it (prefix-relative). Optional: stores without it are listed recursively and grouped.
  """
  @callback list_dir(state :: term(), prefix :: String.t()) ::
              {:ok, %{keys: [String.t()], prefixes: [String.t()]}} | {:error, term()}
  @doc "Whether ranged reads fetch only the requested bytes (rather than the whole value)."
  @callback supports_ranges?(state :: term()) :: boolean()

  @doc """
  Several byte ranges of one value at once, in the order given. Optional: stores without it
  serve `ExZarr.Storage.get_ranges/3` with one `get` per range.
  """
  @callback get_ranges(state :: term(), key(), [range()]) ::
              {:ok, [binary()]} | {:error, :not_found | term()}

  @doc "Flushes and releases what the store holds open (a zip being written, a cache)."
  @callback close(state :: term()) :: :ok | {:error, term()}

  @doc """
  Whether one `get_ranges/3` request serves many ranges, so that a read costs about its bytes
  (a local store). Optional: by default, whether the backend has `c:get_ranges/3`; a store in
  front of another one answers for that one.
  """
  @callback multi_range?(state :: term()) :: boolean()

  @doc """
  How many requests to keep in flight by default. Remote stores (S3, GCS, Azure) wait on the
  network rather than the CPU and gain from more than one per core; local stores leave it out.
  """
  @callback io_concurrency(state :: term()) :: pos_integer()

  @doc """
  Several byte ranges of one value and the generation they were read from, all from that one
  generation. With `expected` not nil, only that generation may be read: a backend that can
  make the read conditional does so (`If-Match`), and answers `{:error,
  :generation_mismatch}` when the value has changed; `get_ranges_with_generation/4` compares
  the generation returned besides. Optional: without it reads have the generation `nil`.
  """
  @callback get_ranges_with_generation(
              state :: term(),
              key(),
              [range()],
              expected :: generation()
            ) ::
              {:ok, [binary()], generation()}
              | {:error, :not_found | :generation_mismatch | term()}

  @doc """
  Stores a value if the key holds what `condition` says (see "Conditional writes"), in one
  step with respect to every other writer; `{:ok, generation}` of the new value, or
  `{:error, :generation_mismatch}` with nothing written. A generation the backend does not
  make (from another backend, or `:erlang.make_ref()`) never matches. Optional: a backend
  without it does not do conditional writes.
  """
  @callback put_if(state :: term(), key(), iodata(), condition()) ::
              {:ok, generation()} | {:error, :generation_mismatch | term()}

  @doc """
  Whether the store honours the conditions of `c:put_if/4`. Optional: by default, whether the
  backend has `c:put_if/4`.
  """
  @callback conditional_writes?(state :: term()) :: boolean()

  @optional_callbacks put_if: 4, conditional_writes?: 1

  @doc """
  A term naming the object `key` designates: equal for every store handle that reaches that
  object (two stores opened on the same directory, bucket or table), different for other
  objects. Optional: by default the handle's state and the key.
  """
  @callback identity(state :: term(), key()) :: term()

  @doc """
  The names of the options `c:init/1` takes. `new/2` refuses any other with
  `{:error, {:unknown_option, name}}`, and `ExZarr.create/1` and `ExZarr.open/1` pass the
  backend these (see `ExZarr.split_storage_options/1`). Optional: a backend without it is given
  every option, unchecked.
  """
  @callback options() :: [atom()]

  @doc """
  Deletes every value below a prefix (`""` for the whole store). Optional: by default the
  keys are listed and deleted one by one; a backend with more to clean (the filesystem's
  empty folders and leftovers of interrupted writes) or a bulk delete implements it.
  """
  @callback delete_prefix(state :: term(), prefix :: String.t()) :: :ok | {:error, term()}

  @doc """
  Deletes the value only while it holds `generation`, in one step; `{:error,
  :generation_mismatch}` otherwise. Optional: without it `update/4` checks the generation
  just before an unconditional delete.
  """
  @callback delete_if(state :: term(), key(), generation()) :: :ok | {:error, term()}

  @doc """
  Whether the store honours the condition of `c:delete_if/3`. Optional: by default, whether
  the backend has `c:delete_if/3`.
  """
  @callback conditional_deletes?(state :: term()) :: boolean()

  @doc """
  The byte size of a stored value without reading it (a file's size, an object's
  `Content-Length`). Optional: stores without it read the value.
  """
  @callback size(state :: term(), key()) :: {:ok, non_neg_integer()} | {:error, term()}

  @doc """
  Where the store is, for people: a URL or a name (`"file:///data/a.zarr"`,
  `"s3://bucket/prefix"`), without credentials. Optional: by default the backend's name.
  """
  @callback describe(state :: term()) :: String.t()

  @optional_callbacks list_dir: 2,
                      size: 2,
                      describe: 1,
                      get_ranges: 3,
                      close: 1,
                      multi_range?: 1,
                      io_concurrency: 1,
                      get_ranges_with_generation: 4,
                      identity: 2,
                      options: 0,
                      delete_prefix: 2,
                      delete_if: 3,
                      conditional_deletes?: 1

  @backends %{
    memory: ExZarr.Storage.Memory,
    ets: ExZarr.Storage.ETS,
    filesystem: ExZarr.Storage.Filesystem,
    zip: ExZarr.Storage.Zip,
    mnesia: ExZarr.Storage.Mnesia,
    s3: ExZarr.Storage.S3,
    gcs: ExZarr.Storage.GCS,
    azure: ExZarr.Storage.Azure,
    http: ExZarr.Storage.HTTPStore,
    mongo_gridfs: ExZarr.Storage.GridFS,
    cache: ExZarr.Storage.Cache
  }

  @doc """
  Opens a backend by name (`:memory`, `:filesystem`, ...) or by module, with its options.

      {:ok, store} = ExZarr.Storage.new(:filesystem, path: "/tmp/a.zarr")
  """
  @spec new(atom() | module(), keyword()) :: {:ok, t()} | {:error, term()}
  def new(backend, opts) do
    with {:ok, module} <- backend_module(backend),
         :ok <- check_options(module, opts),
         {:ok, state} <- module.init(opts) do
      {:ok, %__MODULE__{module: module, state: state}}
    end
  end

  @doc """
  The names of the options a backend (by name or module) takes: `{:ok, names}`, or
  `{:ok, :any}` for a backend module that does not declare them (`c:options/0`).

      {:ok, [:table, :owner]} = ExZarr.Storage.option_names(:memory)
  """
  @spec option_names(atom() | module()) :: {:ok, [atom()] | :any} | {:error, term()}
  def option_names(backend) do
    with {:ok, module} <- backend_module(backend) do
      if function_exported?(module, :options, 0), do: {:ok, module.options()}, else: {:ok, :any}
    end
  end

  # Loaded, so that function_exported?/3 answers for its optional callbacks.
  defp backend_module(name) when is_map_key(@backends, name) do
    module = Map.fetch!(@backends, name)

    case Code.ensure_loaded(module) do
      {:module, ^module} -> {:ok, module}
      {:error, reason} -> {:error, {:storage_not_loaded, module, reason}}
    end
  end

  defp backend_module(module) when is_atom(module) do
    if Code.ensure_loaded?(module) and function_exported?(module, :get, 3),
      do: {:ok, module},
      else: {:error, {:unknown_storage, module}}
  end

  defp backend_module(other), do: {:error, {:unknown_storage, other}}

  defp check_options(module, opts) do
    if Keyword.keyword?(opts) do
      case option_names(module) do
        {:ok, :any} -> :ok
        {:ok, names} -> ExZarr.Result.each_ok(Keyword.keys(opts), &known_option(&1, names))
      end
    else
      {:error, {:invalid_options, opts}}
    end
  end

  defp known_option(name, names),
    do: if(name in names, do: :ok, else: {:error, {:unknown_option, name}})

  @doc """
  A boolean option of a backend: its value, the default when absent, or
  `{:error, {:invalid_option, name, value}}`.

      iex> ExZarr.Storage.boolean_option([fsync: true], :fsync, false)
      {:ok, true}
      iex> ExZarr.Storage.boolean_option([fsync: "yes"], :fsync, false)
      {:error, {:invalid_option, :fsync, "yes"}}
  """
  @spec boolean_option(keyword(), atom(), boolean()) ::
          {:ok, boolean()} | {:error, {:invalid_option, atom(), term()}}
  def boolean_option(opts, name, default) do
    case Keyword.get(opts, name, default) do
      value when is_boolean(value) -> {:ok, value}
      value -> {:error, {:invalid_option, name, value}}
    end
  end

  # URL schemes and the backends that serve them; any other `scheme://` is refused.
  @url_schemes %{
    "file" => :filesystem,
    "s3" => :s3,
    "gs" => :gcs,
    "az" => :azure,
    "zip" => :zip,
    "http" => :http,
    "https" => :http
  }

  @doc """
  The backend that serves a URL given as a path: `{:ok, backend}` for `file://`, `s3://`,
  `gs://`, `az://`, `zip://`, `http://` and `https://`; `{:error, {:unsupported_url_scheme,
  scheme}}` for any other
  `scheme://` (so that `"ftp://host/a.zarr"` never becomes a local path); `:not_url` for a
  plain path (or anything that is not a string).

      iex> ExZarr.Storage.url_backend("s3://bucket/a.zarr")
      {:ok, :s3}
      iex> ExZarr.Storage.url_backend("ftp://host/a.zarr")
      {:error, {:unsupported_url_scheme, "ftp"}}
      iex> ExZarr.Storage.url_backend("data/a.zarr")
      :not_url
  """
  @spec url_backend(term()) :: {:ok, atom()} | :not_url | {:error, term()}
  def url_backend(path) when is_binary(path) do
    case url_scheme(path) do
      nil ->
        :not_url

      scheme ->
        case Map.fetch(@url_schemes, scheme) do
          {:ok, backend} -> {:ok, backend}
          :error -> {:error, {:unsupported_url_scheme, scheme}}
        end
    end
  end

  def url_backend(_path), do: :not_url

  @doc """
  The scheme of a `scheme://...` URL, lowercase, or `nil` for a path that is not one.

      iex> ExZarr.Storage.url_scheme("HTTPS://host/x")
      "https"
      iex> ExZarr.Storage.url_scheme("/data/a:b")
      nil
  """
  @spec url_scheme(term()) :: String.t() | nil
  def url_scheme(path) when is_binary(path) do
    case Regex.run(~r/\A([A-Za-z][A-Za-z0-9+.-]*):\/\//, path, capture: :all_but_first) do
      [scheme] -> String.downcase(scheme)
      nil -> nil
    end
  end

  def url_scheme(_path), do: nil

  @doc "Reads a value, or the byte range of it. `{:error, :not_found}` when absent."
  @spec get(t(), key(), range()) :: {:ok, binary()} | {:error, term()}
  def get(store, key, range \\ nil)

  def get(%__MODULE__{module: m, state: s}, key, range) do
    with :ok <- validate_key(key), :ok <- validate_range(range), do: backend_get(m, s, key, range)
  end

  def get(store, _key, _range), do: not_a_store(store)

  @doc """
  Reads several byte ranges of one value: `{:ok, binaries}` in the order of `ranges`.
  A backend with `c:get_ranges/3` serves them in one request (the filesystem: one open, a read
  per range, one close); otherwise they are read with `get/3`, concurrently (`ExZarr.Parallel`'s `:requests`).

      iex> {:ok, store} = ExZarr.Storage.new(:memory, [])
      iex> :ok = ExZarr.Storage.put(store, "c/0", "0123456789")
      iex> ExZarr.Storage.get_ranges(store, "c/0", [{1, 2}, {:suffix, 2}])
      {:ok, ["12", "89"]}
  """
  @spec get_ranges(t(), key(), [range()]) :: {:ok, [binary()]} | {:error, term()}
  def get_ranges(%__MODULE__{module: m, state: s}, key, ranges) when is_list(ranges) do
    with :ok <- validate_key(key),
         :ok <- if(List.improper?(ranges), do: {:error, {:invalid_ranges, ranges}}, else: :ok),
         :ok <- ExZarr.Result.each_ok(ranges, &validate_range/1) do
      cond do
        function_exported?(m, :get_ranges, 3) ->
          Telemetry.request(m, :get_ranges, key, fn -> m.get_ranges(s, key, ranges) end)

        match?([_, _ | _], ranges) ->
          ranges
          |> ExZarr.Parallel.map(&backend_get(m, s, key, &1),
            max_concurrency: ExZarr.Parallel.concurrency(:requests)
          )
          |> ExZarr.Result.map_ok(& &1)

        true ->
          ExZarr.Result.map_ok(ranges, &backend_get(m, s, key, &1))
      end
    end
  end

  def get_ranges(%__MODULE__{}, _key, ranges), do: {:error, {:invalid_ranges, ranges}}
  def get_ranges(store, _key, _ranges), do: not_a_store(store)

  @doc """
  Reads several byte ranges of one value with the generation they come from (see
  "Generations"): `{:ok, binaries, generation}`, all from that generation. With `expected`
  not nil, the bytes must come from that generation, else `{:error, :generation_mismatch}`
  (also when the backend cannot tell generations). The generation is `nil` when the backend
  cannot tell.

      iex> {:ok, store} = ExZarr.Storage.new(:memory, [])
      iex> :ok = ExZarr.Storage.put(store, "c/0", "0123456789")
      iex> {:ok, ["12"], gen} = ExZarr.Storage.get_ranges_with_generation(store, "c/0", [{1, 2}])
      iex> {:ok, ["9"], ^gen} = ExZarr.Storage.get_ranges_with_generation(store, "c/0", [{9, 1}], gen)
      iex> :ok = ExZarr.Storage.put(store, "c/0", "abc")
      iex> ExZarr.Storage.get_ranges_with_generation(store, "c/0", [{0, 1}], gen)
      {:error, :generation_mismatch}
  """
  @spec get_ranges_with_generation(t(), key(), [range()], generation()) ::
          {:ok, [binary()], generation()} | {:error, term()}
  def get_ranges_with_generation(store, key, ranges, expected \\ nil)

  def get_ranges_with_generation(%__MODULE__{module: m, state: s} = store, key, ranges, expected)
      when is_list(ranges) do
    with :ok <- validate_key(key),
         :ok <- ExZarr.Result.each_ok(ranges, &validate_range/1) do
      result =
        if function_exported?(m, :get_ranges_with_generation, 4),
          do:
            Telemetry.request(m, :get_ranges_with_generation, key, fn ->
              m.get_ranges_with_generation(s, key, ranges, expected)
            end),
          else: with({:ok, parts} <- get_ranges(store, key, ranges), do: {:ok, parts, nil})

      case result do
        {:ok, _parts, generation} when expected != nil and generation != expected ->
          {:error, :generation_mismatch}

        other ->
          other
      end
    end
  end

  def get_ranges_with_generation(%__MODULE__{}, _key, ranges, _expected),
    do: {:error, {:invalid_ranges, ranges}}

  @doc """
  For backends whose requests read one range each (object stores): serves
  `c:get_ranges_with_generation/4` with `get_one.(range, expected)` (`{:ok, binary,
  generation}`). Every range is read on the condition that the value is at `expected`, as many
  at a time as `ExZarr.Parallel` runs requests; without `expected`, the first range learns the generation the others must have.
  """
  @spec ranges_with_generation(
          [range()],
          generation(),
          (range(), generation() -> {:ok, binary(), generation()} | {:error, term()})
        ) :: {:ok, [binary()], generation()} | {:error, term()}
  def ranges_with_generation([], expected, _get_one), do: {:ok, [], expected}

  def ranges_with_generation([first | rest], nil, get_one) do
    with {:ok, bytes, generation} <- get_one.(first, nil),
         {:ok, others, ^generation} <- at_generation(rest, generation, get_one) do
      {:ok, [bytes | others], generation}
    end
  end

  def ranges_with_generation(ranges, expected, get_one),
    do: at_generation(ranges, expected, get_one)

  defp at_generation(ranges, expected, get_one) do
    ranges
    |> ExZarr.Parallel.map(&get_one.(&1, expected),
      max_concurrency: ExZarr.Parallel.concurrency(:requests)
    )
    |> ExZarr.Result.map_ok(fn
      {:ok, bytes, ^expected} -> {:ok, bytes}
      {:ok, _bytes, _other} -> {:error, :generation_mismatch}
      error -> error
    end)
    |> case do
      {:ok, parts} -> {:ok, parts, expected}
      error -> error
    end
  end

  @doc """
  A term naming the object `key` designates, equal for every handle on the node that reaches
  it (see `c:identity/2`): `ExZarr.Storage.Lock` serializes read-modify-writes on it.
  """
  @spec identity(t(), key()) :: term()
  def identity(%__MODULE__{module: m, state: s}, key) do
    if function_exported?(m, :identity, 2), do: m.identity(s, key), else: {m, s, key}
  end

  @doc """
  True when one `get_ranges/3` request serves many ranges (as on the filesystem), so that a
  read costs about its bytes; false when the ranges become one `get/3` each (object stores).
  """
  @spec multi_range?(t()) :: boolean()
  def multi_range?(%__MODULE__{module: m, state: s}) do
    if function_exported?(m, :multi_range?, 1),
      do: m.multi_range?(s),
      else: function_exported?(m, :get_ranges, 3)
  end

  @doc "Stores a value (iodata is passed through to the backend without flattening)."
  @spec put(t(), key(), iodata()) :: :ok | {:error, term()}
  def put(%__MODULE__{module: m, state: s}, key, value) do
    with :ok <- validate_key(key) do
      Telemetry.request(m, :put, key, fn -> m.put(s, key, value) end, fn
        :ok -> Telemetry.data_bytes(value)
        _error -> 0
      end)
    end
  end

  def put(store, _key, _value), do: not_a_store(store)

  @doc """
  Stores a value on a condition (see "Conditional writes"): `:absent`, a generation returned
  by a read (`get_ranges_with_generation/4`) or by an earlier `put_if/4`, or `:any`.
  `{:ok, generation}` of the new value; `{:error, :generation_mismatch}` when the key holds
  something else (nothing is written); `{:error, {:conditional_writes_unsupported, backend}}`
  when the store cannot tell (`conditional_writes?/1`).

      {:ok, gen} = ExZarr.Storage.put_if(store, "zarr.json", "{}", :absent)
      {:error, :generation_mismatch} = ExZarr.Storage.put_if(store, "zarr.json", "{}", :absent)
      {:ok, _newer} = ExZarr.Storage.put_if(store, "zarr.json", ~s({"a": 1}), gen)
  """
  @spec put_if(t(), key(), iodata(), condition()) :: {:ok, generation()} | {:error, term()}
  def put_if(%__MODULE__{module: m, state: s} = store, key, value, condition) do
    with :ok <- validate_key(key), :ok <- validate_condition(condition) do
      if conditional_writes?(store) do
        Telemetry.request(m, :put_if, key, fn -> m.put_if(s, key, value, condition) end, fn
          {:ok, _generation} -> Telemetry.data_bytes(value)
          _error -> 0
        end)
      else
        {:error, {:conditional_writes_unsupported, m}}
      end
    end
  end

  def put_if(store, _key, _value, _condition), do: not_a_store(store)

  defp validate_condition(nil), do: {:error, {:invalid_condition, nil}}
  defp validate_condition(_condition), do: :ok

  @doc """
  Deletes the value at `key` only while it holds `generation`, in one step:
  `{:error, :generation_mismatch}` otherwise (nothing is deleted). For backends with
  `c:delete_if/3` (see `conditional_deletes?/1`); `update/4` uses it for `{:delete, reply}`.
  """
  @spec delete_if(t(), key(), generation()) :: :ok | {:error, term()}
  def delete_if(%__MODULE__{module: m, state: s} = store, key, generation) do
    with :ok <- validate_key(key) do
      if conditional_deletes?(store),
        do: Telemetry.request(m, :delete_if, key, fn -> m.delete_if(s, key, generation) end),
        else: {:error, {:conditional_deletes_unsupported, m}}
    end
  end

  def delete_if(store, _key, _generation), do: not_a_store(store)

  @doc "Whether the store deletes on a generation in one step (`delete_if/3`)."
  @spec conditional_deletes?(t()) :: boolean()
  def conditional_deletes?(%__MODULE__{module: m, state: s}) do
    function_exported?(m, :delete_if, 3) and
      (not function_exported?(m, :conditional_deletes?, 1) or m.conditional_deletes?(s))
  end

  @doc """
  Whether the store honours conditional writes (`put_if/4`), so that writers in other OS
  processes or on other machines cannot lose each other's updates (see the table in
  "Conditional writes" for how far each backend reaches).
  """
  @spec conditional_writes?(t()) :: boolean()
  def conditional_writes?(%__MODULE__{module: m, state: s}) do
    function_exported?(m, :put_if, 4) and
      (not function_exported?(m, :conditional_writes?, 1) or m.conditional_writes?(s))
  end

  @doc """
  Read-modify-write of the value at `key`, safe against every concurrent writer the store's
  conditions reach: reads the value (`nil` when absent) with its generation, calls `fun` on
  it and stores the result on the condition that the key still holds what was read; on a
  conflict, waits (exponential backoff with full jitter) and does it all again, a bounded
  number of times. See `ExZarr.Storage.Update` for `fun`'s answers and the options.

      {:ok, :added, _gen} =
        ExZarr.Storage.update(store, "list", fn current ->
          {:write, [current || "", "item;"], :added}
        end)
  """
  @spec update(t(), key(), ExZarr.Storage.Update.change(reply), keyword()) ::
          {:ok, reply, generation()} | {:error, term()}
        when reply: term()
  def update(store, key, fun, opts \\ []), do: ExZarr.Storage.Update.run(store, key, fun, opts)

  @doc """
  Checks by experiment that a store honours conditions (for an S3-compatible server not known
  to): under a scratch key, a put on `:absent` where a value exists and a put on a generation
  that is no longer current must both be refused, and a put on the current generation must
  land; where the store does conditional deletes (`conditional_deletes?/1`), a delete on the
  stale generation must be refused too. The scratch value is deleted afterwards. `:ok`, or
  `{:error, {:conditions_ignored, :absent | :generation | :delete}}`, or the error of a
  request.
  """
  @spec verify_conditional_writes(t()) :: :ok | {:error, term()}
  def verify_conditional_writes(%__MODULE__{} = store) do
    key = ".exzarr-conditions-" <> Base.encode16(:crypto.strong_rand_bytes(8), case: :lower)

    result =
      with {:ok, first} <- put_if(store, key, "1", :absent),
           :ok <- refused(put_if(store, key, "2", :absent), :absent),
           {:ok, _second} <- put_if(store, key, "3", first),
           :ok <- refused(put_if(store, key, "4", first), :generation),
           do: verify_conditional_delete(store, key, first)

    with :ok <- delete(store, key), do: result
  end

  # A delete on a stale generation must be refused (and the value kept).
  defp verify_conditional_delete(store, key, stale) do
    if conditional_deletes?(store) do
      case delete_if(store, key, stale) do
        {:error, :generation_mismatch} -> :ok
        :ok -> {:error, {:conditions_ignored, :delete}}
        error -> error
      end
    else
      :ok
    end
  end

  defp refused({:error, :generation_mismatch}, _which), do: :ok
  defp refused({:ok, _generation}, which), do: {:error, {:conditions_ignored, which}}
  defp refused(error, _which), do: error

  @doc "Deletes a value; deleting a missing key is not an error."
  @spec delete(t(), key()) :: :ok | {:error, term()}
  def delete(%__MODULE__{module: m, state: s}, key) do
    with :ok <- validate_key(key),
         do: Telemetry.request(m, :delete, key, fn -> m.delete(s, key) end)
  end

  def delete(store, _key), do: not_a_store(store)

  @doc """
  Deletes every value below `prefix` (`""` for the whole store), and on the filesystem the
  folders left empty and the leftovers of interrupted writes there.
  """
  @spec delete_prefix(t(), String.t()) :: :ok | {:error, term()}
  def delete_prefix(%__MODULE__{module: m, state: s} = store, prefix) do
    with :ok <- validate_prefix(prefix) do
      prefix = String.trim_trailing(prefix, "/")

      if function_exported?(m, :delete_prefix, 2) do
        Telemetry.request(m, :delete_prefix, prefix, fn -> m.delete_prefix(s, prefix) end)
      else
        with {:ok, keys} <- list(store, prefix),
             do: ExZarr.Result.each_ok(keys, &delete(store, &1))
      end
    end
  end

  @doc "Lists every key below `prefix` (\"\" for the whole store)."
  @spec list(t(), String.t()) :: {:ok, [key()]} | {:error, term()}
  def list(store, prefix \\ "")

  def list(%__MODULE__{module: m, state: s}, prefix) do
    with :ok <- validate_prefix(prefix),
         do: Telemetry.request(m, :list, prefix, fn -> m.list(s, prefix) end, &no_bytes/1)
  end

  def list(store, _prefix), do: not_a_store(store)

  @doc """
  The direct children of `prefix` ("" for the root): `keys` are names of values stored right
  there, `prefixes` names of the folders below (both relative to `prefix`, sorted).

      iex> {:ok, store} = ExZarr.Storage.new(:memory, [])
      iex> :ok = ExZarr.Storage.put(store, "g/a/zarr.json", "{}")
      iex> :ok = ExZarr.Storage.put(store, "g/zarr.json", "{}")
      iex> ExZarr.Storage.list_dir(store, "g")
      {:ok, %{keys: ["zarr.json"], prefixes: ["a"]}}
  """
  @spec list_dir(t(), String.t()) ::
          {:ok, %{keys: [String.t()], prefixes: [String.t()]}} | {:error, term()}
  def list_dir(store, prefix \\ "")

  def list_dir(%__MODULE__{module: m, state: s} = store, prefix) do
    with :ok <- validate_prefix(prefix) do
      prefix = String.trim_trailing(prefix, "/")

      if function_exported?(m, :list_dir, 2),
        do: Telemetry.request(m, :list_dir, prefix, fn -> m.list_dir(s, prefix) end, &no_bytes/1),
        else: list_dir_from_list(store, prefix)
    end
  end

  def list_dir(store, _prefix), do: not_a_store(store)

  defp list_dir_from_list(store, prefix) do
    skip = if prefix == "", do: 0, else: byte_size(prefix) + 1

    with {:ok, keys} <- list(store, prefix) do
      {files, dirs} =
        keys
        |> Enum.map(
          &(&1
            |> binary_part(skip, byte_size(&1) - skip)
            |> String.split("/", parts: 2))
        )
        |> Enum.split_with(&match?([_], &1))

      {:ok,
       %{
         keys: files |> Enum.map(&hd/1) |> Enum.sort(),
         prefixes: dirs |> Enum.map(&hd/1) |> Enum.uniq() |> Enum.sort()
       }}
    end
  end

  @doc """
  The byte size of the value stored under `key` (`{:error, :not_found}` when absent): asked
  of the backend when it can tell without reading the value (`c:size/2`), else read.
  """
  @spec size(t(), key()) :: {:ok, non_neg_integer()} | {:error, term()}
  def size(%__MODULE__{module: m, state: s} = store, key) do
    with :ok <- validate_key(key) do
      if function_exported?(m, :size, 2),
        do: Telemetry.request(m, :size, key, fn -> m.size(s, key) end, &no_bytes/1),
        else: with({:ok, value} <- get(store, key), do: {:ok, byte_size(value)})
    end
  end

  def size(store, _key), do: not_a_store(store)

  @doc """
  Where a store is, for people (`c:describe/1`): `"file:///data/a.zarr"`,
  `"s3://bucket/prefix"`, `"memory"`; never credentials.

      iex> {:ok, store} = ExZarr.Storage.new(:filesystem, path: "/tmp/a.zarr")
      iex> ExZarr.Storage.describe(store)
      "file:///tmp/a.zarr"
  """
  @spec describe(t()) :: String.t()
  def describe(%__MODULE__{module: m, state: s}) do
    if function_exported?(m, :describe, 1),
      do: m.describe(s),
      else: m |> Module.split() |> List.last() |> String.downcase()
  end

  @doc """
  Closes a store: a zip being written gets its central directory, a cache stops. Stores
  with nothing to release return `:ok`.
  """
  @spec close(t()) :: :ok | {:error, term()}
  def close(%__MODULE__{module: m, state: s}) do
    if function_exported?(m, :close, 1), do: m.close(s), else: :ok
  end

  def close(store), do: not_a_store(store)

  @doc """
  The store's preferred number of requests in flight (`c:io_concurrency/1`), or `nil` for a
  local store, where the CPU (the dirty CPU schedulers) is the limit.
  """
  @spec io_concurrency(t()) :: pos_integer() | nil
  def io_concurrency(%__MODULE__{module: m, state: s}) do
    if function_exported?(m, :io_concurrency, 1), do: m.io_concurrency(s)
  end

  @doc "True when the backend serves byte ranges without reading the whole value."
  @spec supports_ranges?(t()) :: boolean()
  def supports_ranges?(%__MODULE__{module: m, state: s}), do: m.supports_ranges?(s)

  @doc """
  Checks that a key stays inside the store: relative, `/`-separated, no empty, `.` or `..`
  segments, no backslash or NUL.

      iex> ExZarr.Storage.validate_key("c/0/1")
      :ok
      iex> ExZarr.Storage.validate_key("../etc/passwd")
      {:error, {:invalid_key, "../etc/passwd"}}
  """
  @spec validate_key(term()) :: :ok | {:error, {:invalid_key, term()}}
  def validate_key(key) when is_binary(key) and key != "" do
    if :binary.match(key, ["\\", <<0>>]) == :nomatch and String.valid?(key) and
         valid_segments?(:binary.split(key, "/", [:global])),
       do: :ok,
       else: {:error, {:invalid_key, key}}
  end

  def validate_key(key), do: {:error, {:invalid_key, key}}

  defp valid_segments?([]), do: true
  defp valid_segments?([segment | _]) when segment in ["", ".", ".."], do: false
  defp valid_segments?([_ | rest]), do: valid_segments?(rest)

  defp validate_prefix(""), do: :ok

  defp validate_prefix(prefix) when is_binary(prefix),
    do: validate_key(String.trim_trailing(prefix, "/"))

  defp validate_prefix(prefix), do: {:error, {:invalid_key, prefix}}

  defp backend_get(m, s, key, range),
    do: Telemetry.request(m, :get, key, fn -> m.get(s, key, range) end)

  defp no_bytes(_result), do: 0

  defp not_a_store(store), do: {:error, {:invalid_argument, __MODULE__, store}}

  defp validate_range(nil), do: :ok

  defp validate_range({offset, length})
       when is_integer(offset) and offset >= 0 and is_integer(length) and length >= 0,
       do: :ok

  defp validate_range({:suffix, n}) when is_integer(n) and n >= 0, do: :ok
  defp validate_range(range), do: {:error, {:invalid_range, range}}
end
