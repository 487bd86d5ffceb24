// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// Answers every call with 2 MB of zeros: as a client-named "token", its balanceOf inside a Multicall3 batch runs
/// the whole aggregate3 out of memory gas (aggregate3 must copy each sub-call's return data).
contract TestReturnBomb {
    fallback() external {
        assembly {
            return(0, 2000000)
        }
    }
}

/// Burns all the gas it is given on every call (INVALID consumes it at once): inside a batch, the sub-calls after it
/// get 1/64 of what was left.
contract TestGasBurner {
    fallback() external {
        assembly {
            invalid()
        }
    }
}

/// Vault-shaped, with a `decimals()` no uint8 holds (300): as a vault, its shares have no usable decimals; as an
/// asset (another one's `asset()`), it is no ERC-20 token.
contract TestWideDecimals {
    address public asset;

    constructor(address asset_) {
        asset = asset_;
    }

    function totalAssets() external pure returns (uint256) {
        return 0;
    }

    function decimals() external pure returns (uint256) {
        return 300;
    }
}

/// Answers every call with its own calldata: asked `isValidSignature`, its answer starts with that function's
/// selector, which is also the ERC-1271 magic value, followed by the hash it was given.
contract TestEcho {
    fallback(bytes calldata input) external returns (bytes memory) {
        return input;
    }
}

/// Makes `n` zero deposits into a vault as itself (caller and owner: moves a verify must look at), each call padded
/// with `pad` zero bytes after its arguments: a transaction whose trace holds many calls of much input.
contract TestDepositSpammer {
    function go(address vault, uint256 n, uint256 pad) external {
        bytes memory data = abi.encodePacked(abi.encodeWithSignature("deposit(uint256,address)", uint256(0), address(this)), new bytes(pad));
        for (uint256 i; i < n; ++i) {
            (bool ok, ) = vault.call(data);
            require(ok, "deposit failed");
        }
    }
}

/// A token whose Transfer logs say more than its balances move while its fee is on: it takes 1% of every transfer
/// silently, logging the whole amount (as a share-based token rounding a wei away does, by less). Its owner may switch
/// the fee off and on: honest when a stream's creation simulates its transfer, lying when the transfer is sent.
contract TestSwitchedFeeToken {
    mapping(address => uint256) public balanceOf;
    uint8 public constant decimals = 6;
    string public constant symbol = "LIE";
    bool public feeOn;
    event Transfer(address indexed from, address indexed to, uint256 value);
    event Rebase(address indexed holder, uint256 less);

    function setFee(bool on) external {
        feeOn = on;
    }

    /// A holder's balance shrinks with no Transfer, as a negative rebase (or a WETH unwrap) moves it.
    function rebase(address holder, uint256 less) external {
        balanceOf[holder] -= less;
        emit Rebase(holder, less);
    }

    function mint(address to, uint256 amount) external {
        balanceOf[to] += amount;
        emit Transfer(address(0), to, amount);
    }

    function transfer(address to, uint256 amount) external returns (bool) {
        balanceOf[msg.sender] -= amount;
        uint256 fee = feeOn ? amount / 100 : 0;
        balanceOf[to] += amount - fee;
        balanceOf[address(0xdead)] += fee;
        emit Transfer(msg.sender, to, amount);
        return true;
    }
}

/// The same token with its fee on from the start.
contract TestLyingFeeToken is TestSwitchedFeeToken {
    constructor() {
        feeOn = true;
    }
}

/// An honest interest-bearing token: balances are shares valued at an index that grows with the time and a ratio its
/// owner sets (a rebase); a transfer moves the shares worth at least the amount, and logs the amount.
contract TestIndexedToken {
    mapping(address => uint256) public sharesOf;
    uint8 public constant decimals = 6;
    string public constant symbol = "IDX";
    uint256 public immutable start = block.timestamp;
    uint256 public ratio = 1e18;
    event Transfer(address indexed from, address indexed to, uint256 value);

    function setRatio(uint256 r) external {
        ratio = r;
    }

    /// ~5% a year on top of the ratio.
    function index() public view returns (uint256) {
        return (ratio * (1e18 + (block.timestamp - start) * 1_585_489_599)) / 1e18;
    }

    function balanceOf(address holder) external view returns (uint256) {
        return (sharesOf[holder] * index()) / 1e18;
    }

    function mint(address to, uint256 amount) external {
        sharesOf[to] += (amount * 1e18 + index() - 1) / index();
        emit Transfer(address(0), to, amount);
    }

    function transfer(address to, uint256 amount) external returns (bool) {
        uint256 shares = (amount * 1e18 + index() - 1) / index();
        sharesOf[msg.sender] -= shares;
        sharesOf[to] += shares;
        emit Transfer(msg.sender, to, amount);
        return true;
    }
}

/// A token whose transfer moves nothing and answers false (as some old tokens do rather than revert).
contract TestFalseToken {
    mapping(address => uint256) public balanceOf;
    uint8 public constant decimals = 6;

    function mint(address to, uint256 amount) external {
        balanceOf[to] += amount;
    }

    function transfer(address, uint256) external pure returns (bool) {
        return false;
    }
}
